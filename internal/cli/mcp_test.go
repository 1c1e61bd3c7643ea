package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quarry-rag/quarry/internal/cli"
)

// lockedBuffer is a buffer the command writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func mcpKB(t *testing.T) (docs, kb string) {
	t.Helper()
	docs = t.TempDir()
	kb = filepath.Join(t.TempDir(), "kb")
	writeFiles(t, docs, map[string]string{
		"guide/refunds.md": "# Guide\n\n## Refunds\n\nRefunds are paid within five days of the return.\n",
	})
	if code, _, errOut := run(t, "", "ingest", docs, "--kb", kb); code != 0 {
		t.Fatalf("ingest: %d %s", code, errOut)
	}
	return docs, kb
}

func mcpSearch(t *testing.T, cs *sdk.ClientSession) map[string]any {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "knowledge_search", Arguments: map[string]any{"query": "refunds"}})
	if err != nil || res.IsError {
		t.Fatalf("knowledge_search: %v %+v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out map[string]any
	json.Unmarshal(b, &out)
	return out
}

func TestMCPStdio(t *testing.T) {
	_, kb := mcpKB(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errOut lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(context.Background(), []string{"mcp", "--kb", kb, "--read-only", "--scope", "sourceName = 'guide/refunds.md'"}, cli.IO{In: inR, Out: outW, Err: &errOut})
	}()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).
		Connect(context.Background(), &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if got := strings.Join(names, " "); strings.Contains(got, "knowledge_ingest ") || strings.Contains(got, "knowledge_delete") || !strings.Contains(got, "knowledge_search") {
		t.Errorf("read-only tools: %s", got)
	}
	out := mcpSearch(t, cs)
	results, _ := out["results"].([]any)
	if len(results) == 0 || results[0].(map[string]any)["source"] != "guide/refunds.md" {
		t.Errorf("search over stdio: %v", out)
	}
	cs.Close()
	inW.Close()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("quarry mcp exited %d: %s", code, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("quarry mcp did not stop when stdin closed")
	}
}

func TestMCPHTTPAndRoots(t *testing.T) {
	docs, kb := mcpKB(t)
	ctx, cancel := context.WithCancel(context.Background())
	var errOut lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(ctx, []string{"mcp", "--kb", kb, "--http", "127.0.0.1:0", "--root", docs}, cli.IO{In: strings.NewReader(""), Out: io.Discard, Err: &errOut})
	}()
	addr := regexp.MustCompile(`http://127\.0\.0\.1:\d+`)
	var url string
	for deadline := time.Now().Add(10 * time.Second); url == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		url = addr.FindString(errOut.String())
	}
	if url == "" {
		cancel()
		t.Fatalf("no address announced: %s", errOut.String())
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).
		Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out := mcpSearch(t, cs); out["collection"] != "default" {
		t.Errorf("search over HTTP: %v", out)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "knowledge_ingest", Arguments: map[string]any{"paths": []string{kb}}})
	if err != nil || !res.IsError {
		t.Errorf("ingest outside --root: %v %+v", err, res)
	}
	cs.Close()
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("quarry mcp --http exited %d: %s", code, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("quarry mcp --http did not stop when cancelled")
	}
}

// TestMCPSubprocessHelper is `quarry mcp` when the test binary is started
// by TestMCPSubprocess; otherwise it does nothing.
func TestMCPSubprocessHelper(t *testing.T) {
	if os.Getenv("GO_TEST_MCP_HELPER") != "1" {
		t.Skip("run by TestMCPSubprocess")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	os.Exit(cli.Run(context.Background(), args, cli.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}

// TestMCPSubprocess starts `quarry mcp` as a process, as a desktop client
// does, and talks to it over its stdin and stdout.
func TestMCPSubprocess(t *testing.T) {
	_, kb := mcpKB(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestMCPSubprocessHelper$", "--", "mcp", "--kb", kb)
	// Not QUARRY_…: those variables are settings.
	cmd.Env = append(os.Environ(), "GO_TEST_MCP_HELPER=1")
	var errOut lockedBuffer
	cmd.Stderr = &errOut
	ctx := context.Background()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).
		Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v; stderr: %s", err, errOut.String())
	}
	out := mcpSearch(t, cs)
	results, _ := out["results"].([]any)
	if len(results) == 0 || results[0].(map[string]any)["source"] != "guide/refunds.md" {
		t.Errorf("search in a subprocess: %v", out)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v; stderr: %s", err, errOut.String())
	}
	if cmd.ProcessState == nil || !cmd.ProcessState.Success() {
		t.Errorf("quarry mcp did not exit cleanly on closed stdin: %v; stderr: %s", cmd.ProcessState, errOut.String())
	}
}

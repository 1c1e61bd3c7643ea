package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/internal/cli"
)

// copyDocs puts the fixture folder at dir/docs.
func copyDocs(t *testing.T, dir string) {
	t.Helper()
	if err := os.CopyFS(filepath.Join(dir, "docs"), os.DirFS("testdata/docs")); err != nil {
		t.Fatal(err)
	}
}

// TestSameAsTheCommandLine runs the example and the three commands it
// stands for on the same folder, each in a knowledge base of its own, and
// checks they agree: the same chunks, the same hits, the same answer.
func TestSameAsTheCommandLine(t *testing.T) {
	for _, v := range []string{"QUARRY_KB", "QUARRY_LLM", "QUARRY_EMBEDDER", "QUARRY_SEARCH_MODE", "QUARRY_COLLECTION", "QUARRY_STORE"} {
		t.Setenv(v, "") // restored when the test ends
		os.Unsetenv(v)
	}
	lib, cmd := t.TempDir(), t.TempDir()
	copyDocs(t, lib)
	copyDocs(t, cmd)

	wd, _ := os.Getwd()
	var logged bytes.Buffer
	log.SetOutput(io.MultiWriter(&logged, os.Stderr))
	log.SetFlags(0)
	t.Cleanup(func() { log.SetOutput(os.Stderr); log.SetFlags(log.LstdFlags) })
	if err := os.Chdir(lib); err != nil {
		t.Fatal(err)
	}
	main()
	if err := os.Chdir(wd); err != nil {
		t.Fatal(err)
	}

	run := func(args ...string) []byte {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := cli.Run(context.Background(), args, cli.IO{In: strings.NewReader(""), Out: &out, Err: &errOut}); code != 0 {
			t.Fatalf("quarry %v: exit %d: %s", args, code, errOut.String())
		}
		return out.Bytes()
	}
	kbOf := func(dir string) string { return filepath.Join(dir, ".quarry") }
	run("ingest", filepath.Join(cmd, "docs"), "--kb", kbOf(cmd))

	type hit struct {
		ID       string  `json:"id"`
		Score    float64 `json:"score"`
		Location string  `json:"location"`
	}
	var libHits, cmdHits []hit
	for dir, dst := range map[string]*[]hit{lib: &libHits, cmd: &cmdHits} {
		var body struct { // the HTTP API's search body
			Results []hit `json:"results"`
		}
		if err := json.Unmarshal(run("search", "when are refunds paid", "--kb", kbOf(dir), "--json"), &body); err != nil {
			t.Fatal(err)
		}
		*dst = body.Results
	}
	if len(libHits) == 0 || !slices.Equal(libHits, cmdHits) {
		t.Fatalf("hits differ:\nlibrary      %v\ncommand line %v", libHits, cmdHits)
	}
	var answer struct {
		Answer string `json:"answer"`
	}
	if err := json.Unmarshal(run("ask", "How long do refunds take?", "--kb", kbOf(cmd), "--json"), &answer); err != nil {
		t.Fatal(err)
	}
	want := libHits[0].Location + " \n" + answer.Answer + "\n"
	if logged.String() != want || !strings.Contains(answer.Answer, "fourteen days") {
		t.Errorf("the example printed\n%q\nthe command line answers\n%q", logged.String(), want)
	}
}

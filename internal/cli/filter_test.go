package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/internal/cli"
)

// run executes the CLI in process with stdin and returns its exit code and
// output streams.
func run(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.Run(context.Background(), args, cli.IO{In: strings.NewReader(stdin), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

const tourCanonical = `{"operator":"and","conditions":[{"operator":"eq","field":"tenant","value":"acme"},{"operator":"or","conditions":[{"operator":"gte","field":"year","value":2025},{"operator":"contains_any","field":"tags","value":["go","rag"]}]}]}` + "\n"

func TestFilterCheckSyntaxesAgree(t *testing.T) {
	for _, f := range []string{
		`tenant = 'acme' and (year >= 2025 or tags contains any ('go','rag'))`,
		`{"tenant":"acme","$or":[{"year":{"$gte":2025}},{"tags":{"$containsAny":["go","rag"]}}]}`,
		strings.TrimSpace(tourCanonical),
	} {
		for _, withSchema := range []bool{false, true} {
			args := []string{"filter", "check", f}
			if withSchema {
				args = []string{"filter", "check", "--schema", "testdata/schema.json", f}
			}
			code, out, errOut := run(t, "", args...)
			if code != 0 || out != tourCanonical {
				t.Errorf("%v: code %d out %q err %q", args, code, out, errOut)
			}
		}
	}
}

func TestFilterCheckRejects(t *testing.T) {
	tests := []struct {
		filter string
		says   []string
	}{
		{`lang != 'de'`, []string{`"lang"`, "required"}},
		{`lang >= 'a'`, []string{`"lang"`, "number"}},
		{`lang >= 3`, []string{`"lang"`, "numeric"}},
		{`undeclared = 1`, []string{`"undeclared"`, "not declared"}},
		{`tenant = null`, []string{`"tenant"`, "null"}},
		{`{"tenant":null}`, []string{`"tenant"`, "null"}},
		{`year = '2025'`, []string{`"year"`, "expects integer"}},
		{`tenant = 'acme' and`, []string{"column 20", "^"}},
	}
	for _, tt := range tests {
		code, out, errOut := run(t, "", "filter", "check", "--schema", "testdata/schema.json", tt.filter)
		if code != cli.ExitUsage || out != "" {
			t.Errorf("%s: code %d out %q", tt.filter, code, out)
		}
		for _, s := range tt.says {
			if !strings.Contains(errOut, s) {
				t.Errorf("%s: stderr %q does not say %q", tt.filter, errOut, s)
			}
		}
	}
}

func TestFilterMatch(t *testing.T) {
	docs, err := os.ReadFile("testdata/docs.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"tenant = 'acme'"}, "a\nb\nd\n"},
		{[]string{"--schema", "testdata/schema.json", "tenant = 'acme' and (year >= 2025 or tags contains any ('php'))"}, "a\nb\n"},
		{[]string{"tenant != 'acme'"}, "c\n"},
		{[]string{"lang != 'de'"}, "a\n"}, // without a schema neq is allowed; missing fields still never match
		{[]string{"sourceType = 'file'"}, "d\n"},
		{[]string{`{"year":{"$gt":2019,"$lt":2026}}`}, "a\n"},
		{[]string{"year > 3000"}, ""},
	}
	for _, tt := range tests {
		args := append([]string{"filter", "match"}, tt.args...)
		code, out, errOut := run(t, string(docs), args...)
		if code != 0 || out != tt.want {
			t.Errorf("%v: code %d out %q want %q (stderr %q)", tt.args, code, out, tt.want, errOut)
		}
	}
}

func TestFilterMatchBadInput(t *testing.T) {
	tests := []struct {
		stdin string
		args  []string
		code  int
		says  string
	}{
		{`{"id":"a","metadata":{"year":"x"}}`, []string{"--schema", "testdata/schema.json", "year = 1"}, cli.ExitRuntime, "line 1"},
		{"{\"id\":\"a\"}\n{not json}\n", []string{"a = 1"}, cli.ExitRuntime, "line 2"},
		{`{"content":"no id"}`, []string{"a = 1"}, cli.ExitRuntime, "no \"id\""},
		{`{"id":"a","metadata":{"score":1}}`, []string{"a = 1"}, cli.ExitRuntime, "reserved"},
		{``, []string{`{"operator":"raw","store":"qdrant","fragment":{}}`}, cli.ExitUsage, "qdrant"},
		{``, []string{"--schema", "testdata/missing.json", "a = 1"}, cli.ExitUsage, "missing.json"},
		{``, []string{}, cli.ExitUsage, "accepts 1 arg"},
		{``, []string{"--bogus", "a = 1"}, cli.ExitUsage, "bogus"},
	}
	for _, tt := range tests {
		args := append([]string{"filter", "match"}, tt.args...)
		code, _, errOut := run(t, tt.stdin, args...)
		if code != tt.code || !strings.Contains(errOut, tt.says) {
			t.Errorf("%v: code %d stderr %q; want code %d saying %q", tt.args, code, errOut, tt.code, tt.says)
		}
	}
}

func TestUnknownCommandIsUsageError(t *testing.T) {
	code, _, errOut := run(t, "", "frobnicate")
	if code != cli.ExitUsage {
		t.Errorf("code %d, stderr %q", code, errOut)
	}
}

// TestRawFilterFlag: a raw fragment in --filter is a usage error unless
// --allow-raw-filters is given, on every command that takes a filter.
func TestRawFilterFlag(t *testing.T) {
	docs := t.TempDir()
	kb := filepath.Join(t.TempDir(), "kb")
	if err := os.WriteFile(filepath.Join(docs, "a.md"), []byte("# A\n\nSome searchable words about refunds.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := run(t, "", "ingest", docs, "--kb", kb); code != 0 {
		t.Fatalf("ingest: %d %s", code, errOut)
	}
	raw := `{"operator":"raw","store":"postgres","fragment":"true) OR (true"}`
	for _, args := range [][]string{
		{"search", "refunds", "--kb", kb, "--filter", raw},
		{"ask", "refunds?", "--kb", kb, "--filter", raw},
		{"delete", "--kb", kb, "--filter", raw},
	} {
		code, _, errOut := run(t, "", args...)
		if code != 2 || !strings.Contains(errOut, "not accepted from requests") {
			t.Errorf("%s with a raw filter: exit %d, %s", args[0], code, errOut)
		}
		code, _, errOut = run(t, "", append(args, "--allow-raw-filters")...)
		if strings.Contains(errOut, "not accepted from requests") {
			t.Errorf("%s --allow-raw-filters still refused by policy: exit %d, %s", args[0], code, errOut)
		}
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, _ := run(t, "", args...)
		if code != 0 || !strings.HasPrefix(out, "quarry ") || strings.TrimSpace(out) == "quarry" {
			t.Errorf("%v: exit %d, %q", args, code, out)
		}
	}
}

func TestIngestIncludeExclude(t *testing.T) {
	docs := t.TempDir()
	kb := filepath.Join(t.TempDir(), "kb")
	for name, text := range map[string]string{"a.md": "# A\n\nalpha words here\n", "drafts/b.md": "# B\n\nbeta words here\n", "c.txt": "gamma words here\n"} {
		p := filepath.Join(docs, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := run(t, "", "ingest", docs, "--kb", kb, "--include", "*.md", "--exclude", "drafts/")
	if code != 0 || !strings.Contains(out, "1 files: 1 written") {
		t.Fatalf("ingest with --include/--exclude: %d %q %q", code, out, errOut)
	}
	if code, _, errOut := run(t, "", "ingest", docs, "--kb", kb, "--include", "# nothing"); code != 2 || !strings.Contains(errOut, "matches nothing") {
		t.Errorf("a pattern that matches nothing: %d %q", code, errOut)
	}
}

// searchHits are the results of `quarry search --json`, whose output is
// the HTTP API's search body.
func searchHits(out string) ([]map[string]any, error) {
	var body struct {
		Collection string           `json:"collection"`
		Mode       string           `json:"mode"`
		Results    []map[string]any `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &body); err != nil {
		return nil, err
	}
	if body.Collection == "" || body.Mode == "" {
		return nil, fmt.Errorf("no collection or mode in %s", out)
	}
	return body.Results, nil
}

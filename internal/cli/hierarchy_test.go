package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/embedded"
)

// handbook is a folder tree three levels deep; the loader skips its
// node_modules and dot-folders.
var handbook = map[string]string{
	"README.md":                      "# Handbook\n\nWelcome to the handbook: how we work, bill and ship.\n",
	"guides/intro.md":                "# Getting Started\n\nHow the guides are organised and how to read them.\n",
	"guides/billing/refunds.md":      "# Refund Policy\n\nRefunds are paid within fourteen days of the return.\n\n## Gift Cards\n\nGift cards are never refunded in cash.\n",
	"guides/billing/tax/vat.md":      "# VAT Rates\n\nVAT is charged at the local rate of the customer's country.\n",
	"api/faq.md":                     "# Shop\n\nGift cards gift cards gift cards: buy gift cards in the shop.\n",
	"api/client/invoices.go":         "package client\n\n// CreateInvoice makes an invoice for an order.\nfunc CreateInvoice(order string) error {\n\treturn nil\n}\n",
	"node_modules/pkg/README.md":     "# Skipped\n\nA dependency's readme, kept under the root node.\n",
	"guides/.drafts/unfinished.md":   "# Draft\n\nA draft in a dot-folder hangs under guides.\n",
	"guides/billing/tax/.keep/x.txt": "a file under a skipped folder deep down, long enough to keep",
}

type treeJSON struct {
	Name     string      `json:"name"`
	Path     string      `json:"path"`
	Kind     string      `json:"kind"`
	Chunks   int         `json:"chunks"`
	Total    int         `json:"total"`
	Triggers []string    `json:"triggers"`
	Children []*treeJSON `json:"children"`
}

func (t *treeJSON) paths(out map[string]*treeJSON) map[string]*treeJSON {
	out[t.Path] = t
	for _, c := range t.Children {
		c.paths(out)
	}
	return out
}

func TestHierarchyFromIngestion(t *testing.T) {
	docs := t.TempDir()
	kb := filepath.Join(t.TempDir(), "kb")
	writeFiles(t, docs, handbook)
	code, out, errOut := run(t, "", "ingest", docs, "--kb", kb)
	if code != 0 || !strings.Contains(out, "hierarchy: 6 nodes (6 new)") {
		t.Fatalf("ingest: %d %q %q", code, out, errOut)
	}
	code, out, errOut = run(t, "", "tree", "--kb", kb, "--json")
	var tree treeJSON
	if code != 0 || json.Unmarshal([]byte(out), &tree) != nil {
		t.Fatalf("tree: %d %q %q", code, out, errOut)
	}
	nodes := tree.paths(map[string]*treeJSON{})
	want := map[string]struct {
		kind          string
		chunks, total int
	}{
		"/Root":                    {"root", 1, 7},
		"/Root/api":                {"fundamental", 1, 2},
		"/Root/api/client":         {"specialization", 1, 1},
		"/Root/guides":             {"fundamental", 1, 4},
		"/Root/guides/billing":     {"specialization", 2, 3},
		"/Root/guides/billing/tax": {"specialization", 1, 1},
	}
	if len(nodes) != len(want) {
		t.Errorf("nodes: %v", slices.Sorted(func(y func(string) bool) {
			for p := range nodes {
				y(p)
			}
		}))
	}
	for p, w := range want {
		n := nodes[p]
		if n == nil || n.Kind != w.kind || n.Chunks != w.chunks || n.Total != w.total {
			t.Errorf("%s: got %+v, want %+v", p, n, w)
		}
	}
	code, out, _ = run(t, "", "tree", "--kb", kb, "--depth", "1")
	if code != 0 || !strings.Contains(out, "├── api  (1 chunks, 2 in all)") || !strings.Contains(out, "└── guides  (1 chunks, 4 in all)") || strings.Contains(out, "billing") {
		t.Errorf("tree --depth 1:\n%s", out)
	}

	// A query equal to a trigger returns that node's chunks first; the
	// plain search prefers the shop's page.
	code, out, _ = run(t, "", "search", "gift", "--kb", kb, "--json", "-k", "3")
	hits, err := searchHits(out)
	if code != 0 || err != nil || hits[0]["source"] != "api/faq.md" {
		t.Fatalf("plain search: %d %s", code, out)
	}
	code, out, _ = run(t, "", "search", "gift", "--kb", kb, "--json", "-k", "3", "--mode", "auto")
	hits, err = searchHits(out)
	if code != 0 || err != nil || len(hits) != 3 {
		t.Fatalf("auto search: %d %s", code, out)
	}
	if hits[0]["source"] != "guides/billing/refunds.md" || hits[1]["source"] != "guides/billing/refunds.md" || hits[2]["source"] != "api/faq.md" {
		t.Errorf("auto search order: %v, %v, %v", hits[0]["source"], hits[1]["source"], hits[2]["source"])
	}
	place, _ := hits[0]["hierarchy"].(map[string]any)
	if node, _ := place["node"].(map[string]any); node["path"] != "/Root/guides/billing" {
		t.Errorf("result's node: %v", place["node"])
	}
	if linked, _ := place["linked_results"].([]any); len(linked) == 0 || linked[0] != float64(2) {
		t.Errorf("links among results: %v", place["linked_results"])
	}
	code, out, _ = run(t, "", "search", "gift", "--kb", kb, "-k", "3", "--mode", "auto")
	if code != 0 || !strings.HasPrefix(out, `trigger "gift" → /Root/guides/billing`) || !strings.Contains(out, "   in /Root/guides/billing") {
		t.Errorf("auto search text:\n%s", out)
	}

	code, out, _ = run(t, "", "links", "--kb", kb, "--json")
	var links []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &links) != nil {
		t.Fatalf("links: %d %s", code, out)
	}
	for _, l := range links {
		if l["type"] != store.LinkTagOverlap && l["type"] != store.LinkCrossRef || l["weight"].(float64) <= 0 || l["weight"].(float64) > 1 {
			t.Errorf("link: %v", l)
		}
	}
	code, out, _ = run(t, "", "links", "--kb", kb)
	if code != 0 || (len(links) > 0 && !strings.Contains(out, " --[")) {
		t.Errorf("links text: %q", out)
	}
	code, out, _ = run(t, "", "links", "--kb", kb, "--format", "dot")
	if code != 0 || !strings.HasPrefix(out, "graph knowledge {") || !strings.HasSuffix(out, "}\n") || strings.Count(out, " -- ") != len(links) {
		t.Errorf("links --format dot (%d links):\n%s", len(links), out)
	}
	if len(links) > 0 && !strings.Contains(out, fmt.Sprintf("%q -- %q", links[0]["from_path"], links[0]["to_path"])) {
		t.Errorf("links --format dot lacks the first link %v:\n%s", links[0], out)
	}
	if code, _, _ = run(t, "", "links", "--kb", kb, "--format", "svg"); code != 2 {
		t.Errorf("links --format svg: exit %d, want 2", code)
	}
}

func TestHealthCommand(t *testing.T) {
	docs := t.TempDir()
	kb := filepath.Join(t.TempDir(), "kb")
	files := maps(handbook)
	files["guides/tiny.txt"] = "  -- * --  "
	writeFiles(t, docs, files)
	if code, out, errOut := run(t, "", "ingest", docs, "--kb", kb); code != 0 {
		t.Fatalf("ingest: %d %q %q", code, out, errOut)
	}
	// The tiny chunk alone is serious.
	code, out, _ := run(t, "", "health", "--kb", kb)
	if code != 1 || !strings.Contains(out, "serious tiny or empty chunks: 1 (fixable)") {
		t.Errorf("health: %d\n%s", code, out)
	}

	// Seed the rest: a missing source file, a stale checkpoint, an orphan
	// node, a broken parent, a duplicate name.
	os.Remove(filepath.Join(docs, "guides", "intro.md"))
	if err := os.Remove(filepath.Join(kb, "index", "default", "CURRENT")); err != nil {
		t.Fatal(err)
	}
	b, err := embedded.Open(t.Context(), kb, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.PutNodes(t.Context(), "default", []store.Node{
		{ParentID: 1, Kind: store.NodeFundamental, Name: "Lonely", Path: "/Root/Lonely", Triggers: []string{"alone"}},
		{ParentID: 9999, Kind: store.NodeFundamental, Name: "X", Path: "/Root/X", Triggers: []string{"xray"}},
		{ParentID: 1, Kind: store.NodeFundamental, Name: "api", Path: "/Root/api", Triggers: []string{"api"}},
	}); err != nil {
		t.Fatal(err)
	}
	// Close without checkpointing: the store was only opened for nodes.
	os.Remove(filepath.Join(kb, "index", "default", "CURRENT"))
	b.Close()
	os.Remove(filepath.Join(kb, "index", "default", "CURRENT"))

	code, out, _ = run(t, "", "health", "--kb", kb, "--json")
	var rep struct {
		OK       bool `json:"ok"`
		Findings []struct {
			Check    string `json:"check"`
			Severity string `json:"severity"`
			Count    int    `json:"count"`
		} `json:"findings"`
		Fixed []string `json:"fixed"`
	}
	if code != 1 || json.Unmarshal([]byte(out), &rep) != nil || rep.OK {
		t.Fatalf("health --json: %d %s", code, out)
	}
	found := func() map[string]int {
		m := map[string]int{}
		for _, f := range rep.Findings {
			m[f.Check] = f.Count
		}
		return m
	}
	got := found()
	for check, n := range map[string]int{"orphan_nodes": 3, "broken_parent": 1, "tiny_or_empty_chunks": 1, "duplicate_node_names": 1,
		"sources_missing_on_disk": 1, "stale_index_checkpoint": 1} {
		if got[check] != n {
			t.Errorf("%s: %d, want %d (findings %v)", check, got[check], n, got)
		}
	}

	// The audit's own close wrote a fresh checkpoint: make it stale again.
	os.Remove(filepath.Join(kb, "index", "default", "CURRENT"))
	code, out, _ = run(t, "", "health", "--kb", kb, "--json", "--fix")
	rep.Findings, rep.Fixed = nil, nil
	if code != 1 || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Fixed) == 0 {
		t.Fatalf("health --fix: %d %s", code, out)
	}
	if !slices.ContainsFunc(rep.Fixed, func(s string) bool { return strings.HasPrefix(s, "rebuilt the indexes") }) {
		t.Errorf("--fix did not rebuild the stale indexes: %v", rep.Fixed)
	}
	got = found()
	for _, fixed := range []string{"tiny_or_empty_chunks", "stale_index_checkpoint"} {
		if got[fixed] != 0 {
			t.Errorf("%s survived --fix: %v\n%s", fixed, got, out)
		}
	}
	for _, kept := range []string{"orphan_nodes", "broken_parent", "duplicate_node_names", "sources_missing_on_disk"} {
		if got[kept] == 0 {
			t.Errorf("%s is not a safe fix but disappeared: %v", kept, got)
		}
	}
}

func maps(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

package hierarchy_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/hierarchy"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/memory"
)

var model = embed.ModelInfo{Provider: "test", Model: "unit", Dimension: 3}

func newColl(t *testing.T) *store.Collection {
	t.Helper()
	s := store.New(memory.New())
	t.Cleanup(func() { s.Close() })
	c, err := s.CreateCollection(t.Context(), store.CollectionConfig{Name: "kb", Model: model})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// chunk makes a file chunk of source name with a heading path.
func chunk(name string, i int, content string, headings ...string) *document.Document {
	d := document.New(content)
	d.SourceType, d.SourceName = document.SourceFile, name
	d.ID = document.ChunkID(d.SourceType, name, i, content)
	d.Embedding = []float32{1, float32(i + 1), 0.5}
	d.Provenance = document.Provenance{Source: name, HeadingPath: headings, ChunkIndex: i}
	return d
}

func open(t *testing.T, c *store.Collection) *hierarchy.Hierarchy {
	t.Helper()
	h, err := hierarchy.Open(c)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func paths(t *testing.T, h *hierarchy.Hierarchy) map[string]store.Node {
	t.Helper()
	nodes, err := h.Nodes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]store.Node{}
	for _, n := range nodes {
		out[n.Path] = n
	}
	return out
}

// threeLevels is a folder tree three levels deep with a homonym ("billing"
// under api and under guides: folders are made in path order, so the one
// under guides is qualified) and folders the skip rules ignore.
func threeLevels() []*document.Document {
	return []*document.Document{
		chunk("README.md", 0, "Welcome to the handbook of the company.", "Handbook"),
		chunk("guides/intro.md", 0, "How the guides are organised and read.", "Getting Started"),
		chunk("guides/billing/refunds.md", 0, "Refunds are paid within fourteen days.", "Refund Policy"),
		chunk("guides/billing/refunds.md", 1, "Gift cards are never refunded in cash.", "Refund Policy", "Gift Cards"),
		chunk("guides/billing/tax/vat.md", 0, "VAT is charged at the local rate.", "VAT Rates"),
		chunk("api/billing/invoices.go", 0, "func CreateInvoice(ctx context.Context) error {\n\treturn nil\n}", ""),
		chunk("guides/.drafts/wip.md", 0, "A draft that hangs under guides.", "Draft Notes"),
		chunk("node_modules/pkg/index.js", 0, "module.exports = function thing() {};", ""),
	}
}

func TestBuildThreeLevels(t *testing.T) {
	c := newColl(t)
	if err := c.Upsert(t.Context(), threeLevels()); err != nil {
		t.Fatal(err)
	}
	h := open(t, c)
	rep, err := h.Build(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Created != 6 || rep.Attached != 8 || rep.Nodes != 6 {
		t.Errorf("report: %+v", rep)
	}
	got := paths(t, h)
	want := map[string]struct{ kind, folder string }{
		"/Root":                             {store.NodeRoot, ""},
		"/Root/api":                         {store.NodeFundamental, "api"},
		"/Root/api/billing":                 {store.NodeSpecialization, "api/billing"},
		"/Root/guides":                      {store.NodeFundamental, "guides"},
		"/Root/guides/guides · billing":     {store.NodeSpecialization, "guides/billing"},
		"/Root/guides/guides · billing/tax": {store.NodeSpecialization, "guides/billing/tax"},
	}
	if len(got) != len(want) {
		t.Errorf("nodes: got %v", slices.Sorted(func(y func(string) bool) {
			for p := range got {
				y(p)
			}
		}))
	}
	for p, w := range want {
		n, ok := got[p]
		if !ok || n.Kind != w.kind || n.Folder != w.folder {
			t.Errorf("node %s: got %+v (present %v), want kind %s folder %q", p, n, ok, w.kind, w.folder)
		}
	}
	if tr := got["/Root/guides/guides · billing"].Triggers; !slices.Equal(tr, []string{"refund", "policy", "gift", "cards"}) {
		t.Errorf("billing triggers: %v", tr)
	}
	if tr := got["/Root/api/billing"].Triggers; !slices.Equal(tr, []string{"createinvoice", "create", "invoice"}) {
		t.Errorf("api billing triggers: %v", tr)
	}

	tree, err := h.Tree(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// The root holds README.md and the skipped node_modules file; guides
	// holds intro.md and the dot-folder draft.
	if tree.Chunks != 2 || tree.Total != 8 || tree.Children[1].Name != "guides" || tree.Children[1].Chunks != 2 || tree.Children[1].Total != 5 {
		t.Errorf("tree: %+v / %+v", tree, tree.Children[1])
	}

	// Building again changes nothing.
	again, err := h.Build(t.Context(), nil)
	if err != nil || again.Created != 0 || again.Attached != 0 || again.Detached != 0 {
		t.Errorf("second build: %+v %v", again, err)
	}
}

func TestEditing(t *testing.T) {
	c := newColl(t)
	if err := c.Upsert(t.Context(), threeLevels()); err != nil {
		t.Fatal(err)
	}
	h := open(t, c)
	if _, err := h.Build(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	// Rename rewrites the subtree's paths, and survives a rebuild.
	n, err := h.RenameNode(t.Context(), "/Root/guides/guides · billing", "payments")
	if err != nil || n.Path != "/Root/guides/payments" {
		t.Fatalf("rename: %+v %v", n, err)
	}
	if _, err := h.Build(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	got := paths(t, h)
	if _, ok := got["/Root/guides/payments/tax"]; !ok {
		t.Errorf("subtree path not rewritten: %v", got)
	}
	if _, ok := got["/Root/guides/guides · billing"]; ok {
		t.Errorf("a rebuild recreated the renamed node")
	}
	if _, err := h.RenameNode(t.Context(), "tax", "api"); !errors.Is(err, store.ErrInvalidRequest) {
		t.Errorf("rename to a taken name: %v", err)
	}
	// Add: a sibling's name is refused, a name used elsewhere is qualified.
	if _, err := h.AddNode(t.Context(), "/Root/guides", "payments", nil); !errors.Is(err, store.ErrInvalidRequest) {
		t.Errorf("duplicate sibling: %v", err)
	}
	faq, err := h.AddNode(t.Context(), "api", "tax", []string{"Spring Boot", "spring boot", ""})
	if err != nil || faq.Name != "api · tax" || faq.Path != "/Root/api/api · tax" || faq.Kind != store.NodeSpecialization || !slices.Equal(faq.Triggers, []string{"spring boot"}) {
		t.Errorf("add: %+v %v", faq, err)
	}
	// Remove takes the subtree, bottom-up; the chunks stay.
	removed, err := h.RemoveNode(t.Context(), "/Root/guides")
	if err != nil || removed != 3 {
		t.Errorf("remove: %d %v", removed, err)
	}
	if n, _ := c.Count(t.Context(), nil); n != 8 {
		t.Errorf("removing nodes deleted chunks: %d left", n)
	}
	if _, err := h.RemoveNode(t.Context(), "/Root"); !errors.Is(err, store.ErrInvalidRequest) {
		t.Errorf("removing the root: %v", err)
	}
	if _, err := h.RemoveNode(t.Context(), "99999"); !errors.Is(err, store.ErrNodeNotFound) {
		t.Errorf("removing an unknown node: %v", err)
	}
}

func TestTriggerSearchPutsTheNodeFirst(t *testing.T) {
	c := newColl(t)
	docs := threeLevels()
	// A chunk elsewhere that mentions gift cards more than the node's own.
	docs = append(docs, chunk("api/faq.md", 0, "Gift cards gift cards gift cards: buy gift cards here.", "Shop"))
	if err := c.Upsert(t.Context(), docs); err != nil {
		t.Fatal(err)
	}
	h := open(t, c)
	if _, err := h.Build(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	search := func(ctx context.Context, req store.SearchRequest) ([]store.Hit, error) {
		req.Mode = store.ModeKeyword
		return c.Search(ctx, req)
	}
	plain, err := search(t.Context(), store.SearchRequest{Query: "gift", TopK: 3})
	if err != nil || len(plain) == 0 || plain[0].Doc.SourceName != "api/faq.md" {
		t.Fatalf("the plain search should prefer the FAQ: %v %v", plain, err)
	}
	hits, node, err := h.TriggerSearch(t.Context(), store.SearchRequest{Query: "Gift", TopK: 3}, search)
	if err != nil || node == nil || node.Path != "/Root/guides/guides · billing" {
		t.Fatalf("trigger: %+v %v", node, err)
	}
	var got []string
	for _, hit := range hits {
		got = append(got, hit.Doc.SourceName)
	}
	want := []string{"guides/billing/refunds.md", "guides/billing/refunds.md", "api/faq.md"}
	if !slices.Equal(got, want) {
		t.Errorf("trigger search: got %v, want %v", got, want)
	}
	// A query that is no trigger is the plain search.
	hits, node, err = h.TriggerSearch(t.Context(), store.SearchRequest{Query: "gift cards", TopK: 3}, search)
	if err != nil || node != nil || hits[0].Doc.SourceName != "api/faq.md" {
		t.Errorf("no trigger: %v %v", node, err)
	}
	// Results know their node, its neighbours and the results linked to it.
	if _, err := h.RebuildLinks(t.Context()); err != nil {
		t.Fatal(err)
	}
	hits, _, _ = h.TriggerSearch(t.Context(), store.SearchRequest{Query: "gift", TopK: 3}, search)
	rc, err := h.Context(t.Context(), hits)
	if err != nil || rc[0].Node == nil || rc[0].Node.Path != "/Root/guides/guides · billing" || !slices.Equal(rc[0].Linked, []int{2}) {
		t.Errorf("context: %+v %v", rc, err)
	}
}

// linkFixture is testdata/links.json.
type linkFixture struct {
	Nodes []struct {
		Name     string   `json:"name"`
		Triggers []string `json:"triggers"`
	} `json:"nodes"`
	Chunks [][2]string `json:"chunks"`
	Links  []struct {
		From, To, Type, Evidence string
		Weight                   float64
	} `json:"links"`
}

func TestLinkWeightsMatchTheFixture(t *testing.T) {
	raw, err := os.ReadFile("testdata/links.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx linkFixture
	if err := json.Unmarshal(raw, &fx); err != nil {
		t.Fatal(err)
	}
	c := newColl(t)
	h := open(t, c)
	hs, _ := c.Store().Hierarchy()
	ids := map[string]int64{}
	names := map[int64]string{}
	for _, n := range fx.Nodes {
		got, err := h.AddNode(t.Context(), "", n.Name, n.Triggers)
		if err != nil {
			t.Fatal(err)
		}
		ids[n.Name], names[got.ID] = got.ID, n.Name
	}
	var atts []store.Attachment
	for i, ch := range fx.Chunks {
		atts = append(atts, store.Attachment{DocID: string(rune('a' + i)), NodeID: ids[ch[0]], Source: document.Source{Type: "file", Name: ch[1]}})
	}
	if err := hs.Attach(t.Context(), "kb", atts, nil); err != nil {
		t.Fatal(err)
	}
	for run := range 2 { // idempotent
		rep, err := h.RebuildLinks(t.Context())
		if err != nil || rep.Total != len(fx.Links) {
			t.Fatalf("run %d: %+v %v", run, rep, err)
		}
	}
	links, err := hs.Links(t.Context(), "kb")
	if err != nil || len(links) != len(fx.Links) {
		t.Fatalf("links: %v %v", links, err)
	}
	for i, want := range fx.Links {
		l := links[i]
		if names[l.From] != want.From || names[l.To] != want.To || l.Type != want.Type || l.Evidence != want.Evidence || math.Abs(l.Weight-want.Weight) > 1e-12 {
			t.Errorf("link %d: got %s-%s %s %.6f %q, want %+v", i, names[l.From], names[l.To], l.Type, l.Weight, l.Evidence, want)
		}
	}
	_, nb, err := h.Neighbors(t.Context(), "ops", 0, 0)
	if err != nil || len(nb) != 0 {
		t.Errorf("ops has no links: %v %v", nb, err)
	}
	_, nb, err = h.Neighbors(t.Context(), "guides", 1, 5)
	if err != nil || len(nb) != 2 || nb[0].Node.Name != "faq" || nb[1].Node.Name != "api" {
		t.Errorf("neighbours of guides: %+v %v", nb, err)
	}
}

func TestKeywords(t *testing.T) {
	for _, tt := range []struct {
		in    []string
		limit int
		want  []string
	}{
		{[]string{"KnowledgeGraph", "add_node", "find_node_by_trigger"}, 8, []string{"knowledgegraph", "knowledge", "graph", "add_node", "add", "node", "find_node_by_trigger", "find"}},
		{[]string{"9.4. String Functions and Operators"}, 0, []string{"string", "functions", "operators"}},
		{[]string{"parseHTTPRequest"}, 0, []string{"parsehttprequest", "parse", "http", "request"}},
		{[]string{"the get set", "2024"}, 0, nil},
		{[]string{"Café Ölçü"}, 0, []string{"café", "ölçü"}},
	} {
		if got := hierarchy.Keywords(tt.in, tt.limit); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Keywords(%q): got %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSymbols(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"export function fooBar() {", "fooBar"},
		{"func (s *Server) Handle(w http.ResponseWriter) {", "Handle"},
		{"  pub(crate) struct Point {", "Point"},
		{"class UserService:", "UserService"},
		{"def parse_args():", "parse_args"},
	} {
		if got := hierarchy.Symbols(tt.in); len(got) != 1 || got[0] != tt.want {
			t.Errorf("Symbols(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestMergeTriggersCaps(t *testing.T) {
	var many []string
	for i := range 60 {
		many = append(many, string(rune('a'+i%26))+string(rune('a'+i/26))+"x")
	}
	if got := hierarchy.MergeTriggers([]string{"a", "b"}, []string{"b", "c", ""}); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("merge: %v", got)
	}
	if got := hierarchy.MergeTriggers(nil, many); len(got) != hierarchy.MaxTriggers || got[0] != "aax" {
		t.Errorf("cap: %d %v", len(got), got[:1])
	}
}

// Builds racing on one collection (two ingestions at once) make each
// folder's node and the root once.
func TestConcurrentBuilds(t *testing.T) {
	c := newColl(t)
	if err := c.Upsert(t.Context(), threeLevels()); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if _, err := open(t, c).Build(t.Context(), nil); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := paths(t, open(t, c)); len(got) != 6 {
		t.Errorf("%d nodes after racing builds, want 6: %v", len(got), got)
	}
}

package hierarchy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/internal/conformance"
	"github.com/quarry-rag/quarry/split"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/memory"
)

// TestSeedConformance runs the seed's neurag cases; the ones Quarry decides
// otherwise are listed in testdata/conformance_differences.json.
func TestSeedConformance(t *testing.T) {
	cases := conformance.Load(t, "neurag")
	diffs := conformance.LoadDifferences(t, "testdata/conformance_differences.json")
	conformance.Run(t, cases, diffs, func(c conformance.Case) []conformance.Result {
		check, ok := neuragChecks[c.Name]
		if !ok {
			return conformance.Fail("no check for this case")
		}
		return conformance.Of(check(t, c))
	})
}

// seed is a hierarchy on a memory store for one case.
type seed struct {
	h    *Hierarchy
	hs   store.HierarchyStore
	coll *store.Collection
	ids  map[string]int64
}

func newSeed(t *testing.T) *seed {
	s := store.New(memory.New())
	t.Cleanup(func() { s.Close() })
	c, err := s.CreateCollection(context.Background(), store.CollectionConfig{Name: "kb", Model: embed.ModelInfo{Provider: "test", Model: "t", Dimension: 2}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := Open(c)
	if err != nil {
		t.Fatal(err)
	}
	hs, _ := s.Hierarchy()
	return &seed{h: h, hs: hs, coll: c, ids: map[string]int64{}}
}

// node adds a node under parent ("" for the root) with triggers.
func (s *seed) node(parent, name string, triggers ...string) error {
	p := ""
	if parent != "" {
		p = fmt.Sprint(s.ids[parent])
	}
	n, err := s.h.AddNode(context.Background(), p, name, triggers)
	s.ids[name] = n.ID
	return err
}

// chunks attaches (node, text, source) triples as stored chunks.
func (s *seed) chunks(rows [][3]string) error {
	ctx := context.Background()
	var atts []store.Attachment
	for i, r := range rows {
		d := document.New(r[1])
		d.ID = fmt.Sprintf("c%d", i)
		d.SourceType, d.SourceName = document.SourceFile, r[2]
		d.Embedding = []float32{1, 0}
		if err := s.coll.Upsert(ctx, []*document.Document{d}); err != nil {
			return err
		}
		atts = append(atts, store.Attachment{DocID: d.ID, NodeID: s.ids[r[0]], Source: document.Source{Type: d.SourceType, Name: r[2]}})
	}
	return s.hs.Attach(ctx, "kb", atts, nil)
}

func (s *seed) links() []store.Link {
	ls, _ := s.hs.Links(context.Background(), "kb")
	return ls
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

type neuragCheck func(t *testing.T, c conformance.Case) error

var neuragChecks = map[string]neuragCheck{
	"_tags with class method names (extra), capped at 8": func(t *testing.T, c conformance.Case) error {
		var in struct {
			Name  string   `json:"name"`
			Extra []string `json:"extra"`
		}
		var want struct{ Tags []string }
		if err := c.Decode(&in, &want); err != nil {
			return err
		}
		if got := Keywords(append([]string{in.Name}, in.Extra...), 8); !slices.Equal(got, want.Tags) {
			return fmt.Errorf("got %q, want %q", got, want.Tags)
		}
		return nil
	},
	"stopword list": func(t *testing.T, c conformance.Case) error {
		var in struct{ Stop []string }
		var want struct{ Count int }
		if err := c.Decode(&in, &want); err != nil {
			return err
		}
		if len(codeStopWords) != want.Count || !slices.Equal(codeStopWords, in.Stop) {
			return fmt.Errorf("code stop words %q", codeStopWords)
		}
		for _, w := range in.Stop {
			if len(w) >= minKeyword && Keywords([]string{w}, 0) != nil {
				return fmt.Errorf("%q is kept as a keyword", w)
			}
		}
		return nil
	},
	"plain text: 60-line chunks, section 'lines {i*60}-{(i+1)*60}', empty chunks skipped": func(t *testing.T, c conformance.Case) error {
		var lines []string
		for i := 1; i <= 130; i++ {
			lines = append(lines, fmt.Sprintf("line%d", i))
		}
		got, err := splitFile("c.txt", strings.Join(lines, "\n")+"\n")
		if err != nil {
			return err
		}
		if len(got) != 3 {
			return fmt.Errorf("%d chunks, want 3 of 60, 60 and 10 lines", len(got))
		}
		return nil
	},
	"generic code: new chunk at each definition (_DEF_RE), section '{kw} {name}', tags from name": func(t *testing.T, c conformance.Case) error {
		var in struct{ File, Content string }
		var want struct {
			Chunks []struct {
				Section, Text string
				Tags          []string
			}
		}
		if err := c.Decode(&in, &want); err != nil {
			return err
		}
		got, err := splitFile(in.File, in.Content)
		if err != nil {
			return err
		}
		if len(got) != len(want.Chunks) {
			return fmt.Errorf("%d chunks, want %d", len(got), len(want.Chunks))
		}
		for i, w := range want.Chunks {
			// Sections are the seed's display labels; Quarry keeps line
			// ranges. The text and the trigger keywords must agree.
			if strings.TrimSpace(got[i].Content) != w.Text {
				return fmt.Errorf("chunk %d: %q, want %q", i, got[i].Content, w.Text)
			}
			tags := Keywords(Symbols(got[i].Content), 0)
			if len(tags)+len(w.Tags) > 0 && !slices.Equal(tags, w.Tags) {
				return fmt.Errorf("chunk %d tags %q, want %q", i, tags, w.Tags)
			}
		}
		return nil
	},
	"generic code: hard cap 160 lines force-flush (section kept)": func(t *testing.T, c conformance.Case) error {
		body := []string{"func big() {"}
		for i := range 200 {
			body = append(body, fmt.Sprintf("\tx%d := %d", i, i))
		}
		body = append(body, "}")
		got, err := splitFile("e.go", strings.Join(body, "\n")+"\n")
		if err != nil {
			return err
		}
		var n []int
		for _, d := range got {
			n = append(n, d.Provenance.LineEnd-d.Provenance.LineStart+1)
		}
		if !slices.Equal(n, []int{160, 42}) {
			return fmt.Errorf("chunk lines %v, want [160 42]", n)
		}
		return nil
	},
	"add_triggers merges, dedups, keeps order, caps at 40": func(t *testing.T, c conformance.Case) error {
		var in struct{ Current, Add []string }
		var want struct {
			Triggers []string
			Cap      int
		}
		if err := c.Decode(&in, &want); err != nil {
			return err
		}
		if got := MergeTriggers(in.Current, in.Add); !slices.Equal(got, want.Triggers) || MaxTriggers != want.Cap {
			return fmt.Errorf("got %q (cap %d)", got, MaxTriggers)
		}
		return nil
	},
	"find_node_by_trigger: exact JSON-element match (SQL LIKE '%\"kw\"%', ASCII case-insensitive), first row": func(t *testing.T, c conformance.Case) error {
		var in struct {
			Nodes []struct {
				Name     string
				Triggers []string
			}
			Queries []string
		}
		var want struct{ Matches []*string }
		if err := c.Decode(&in, &want); err != nil {
			return err
		}
		s := newSeed(t)
		for _, n := range in.Nodes {
			if err := s.node("", n.Name, n.Triggers...); err != nil {
				return err
			}
		}
		for i, q := range in.Queries {
			n, err := s.h.FindByTrigger(context.Background(), q)
			if err != nil {
				return err
			}
			switch {
			case want.Matches[i] == nil && n != nil:
				return fmt.Errorf("%q matched %s", q, n.Name)
			case want.Matches[i] != nil && (n == nil || n.Name != *want.Matches[i]):
				return fmt.Errorf("%q matched %v, want %s", q, n, *want.Matches[i])
			}
		}
		return nil
	},
	"knowledge_query: trigger match short-circuits search": func(t *testing.T, c conformance.Case) error {
		return errors.New("Quarry puts the node's chunks first and fills top-k from the default mode (quarry search --mode auto); it prints no \"Trigger match:\" text")
	},
	"knowledge_query: top_n default 5, capped at 10": func(t *testing.T, c conformance.Case) error {
		return fmt.Errorf("Quarry's default top-k is %d, bounded by %d", store.DefaultTopK, store.MaxTopK)
	},
	"lexical: two query terms": func(t *testing.T, c conformance.Case) error {
		return errors.New("the case's rows are not given, and Quarry ranks keywords by BM25, not the seed's lexical score")
	},
	"upsert_link basic + get_links outgoing": func(t *testing.T, c conformance.Case) error {
		s := newSeed(t)
		if err := errors.Join(s.node("", "A"), s.node("", "B")); err != nil {
			return err
		}
		if _, err := s.h.UpsertLink(context.Background(), "A", "B", store.LinkTagOverlap, 0.5, "shared: x"); err != nil {
			return err
		}
		ls, err := s.h.LinksOf(context.Background(), "A", "")
		want := []NodeLink{{Other: s.ids["B"], OtherName: "B", OtherPath: "/Root/B", Direction: "out", Type: store.LinkTagOverlap, Weight: 0.5, Evidence: "shared: x"}}
		if err != nil || !slices.Equal(ls, want) {
			return fmt.Errorf("links of A: %+v %v", ls, err)
		}
		return nil
	},
	"upsert_link idempotent (update weight/evidence)": func(t *testing.T, c conformance.Case) error {
		s := newSeed(t)
		if err := errors.Join(s.node("", "A"), s.node("", "B")); err != nil {
			return err
		}
		for _, l := range []struct {
			w float64
			e string
		}{{0.3, ""}, {0.7, "updated"}} {
			if _, err := s.h.UpsertLink(context.Background(), "A", "B", store.LinkTagOverlap, l.w, l.e); err != nil {
				return err
			}
		}
		if ls := s.links(); len(ls) != 1 || ls[0].Weight != 0.7 || ls[0].Evidence != "updated" {
			return fmt.Errorf("links %+v", ls)
		}
		return nil
	},
	"get_links filtered by type, both directions": func(t *testing.T, c conformance.Case) error {
		s := newSeed(t)
		if err := errors.Join(s.node("", "A"), s.node("", "B"), s.node("", "C")); err != nil {
			return err
		}
		ctx := context.Background()
		if _, err := s.h.UpsertLink(ctx, "A", "B", store.LinkTagOverlap, 1, ""); err != nil {
			return err
		}
		if _, err := s.h.UpsertLink(ctx, "A", "C", store.LinkCrossRef, 1, ""); err != nil {
			return err
		}
		ab, _ := s.h.LinksOf(ctx, "A", store.LinkTagOverlap)
		ca, _ := s.h.LinksOf(ctx, "C", store.LinkCrossRef)
		if len(ab) != 1 || ab[0].OtherName != "B" || len(ca) != 1 || ca[0].OtherName != "A" || ca[0].Direction != "in" {
			return fmt.Errorf("A tag_overlap %+v; C cross_ref %+v", ab, ca)
		}
		return nil
	},
	"link types allowed": func(t *testing.T, c conformance.Case) error {
		var in struct{ Types []string }
		var want struct {
			Count int `json:"count_after_3_links"`
		}
		if err := c.Decode(&in, &want); err != nil {
			return err
		}
		s := newSeed(t)
		if err := errors.Join(s.node("", "A"), s.node("", "B")); err != nil {
			return err
		}
		for _, typ := range in.Types {
			if _, err := s.h.UpsertLink(context.Background(), "A", "B", typ, 1, ""); err != nil {
				return err
			}
		}
		if _, err := s.h.UpsertLink(context.Background(), "A", "B", "other", 1, ""); err == nil {
			return errors.New("an unknown link type was accepted")
		}
		if n := len(s.links()); n != want.Count {
			return fmt.Errorf("%d links", n)
		}
		return nil
	},
	"delete_node removes subtree, its chunks and links; unknown id -> 0": func(t *testing.T, c conformance.Case) error {
		s := newSeed(t)
		if err := errors.Join(s.node("", "A"), s.node("A", "B"), s.node("B", "C"), s.node("", "Other"), s.chunks([][3]string{{"B", "on b", "b.md"}})); err != nil {
			return err
		}
		ctx := context.Background()
		if _, err := s.h.UpsertLink(ctx, "C", "Other", store.LinkCrossRef, 1, ""); err != nil {
			return err
		}
		n, err := s.h.RemoveNode(ctx, "A")
		if err != nil || n != 3 || len(s.links()) != 0 {
			return fmt.Errorf("removed %d (%v), %d links left", n, err, len(s.links()))
		}
		if _, err := s.h.Node(ctx, "Other"); err != nil {
			return fmt.Errorf("Other: %v", err)
		}
		if atts, _ := s.hs.Attachments(ctx, "kb"); len(atts) != 0 {
			return fmt.Errorf("attachments left: %+v", atts)
		}
		if n, err := s.h.RemoveNode(ctx, "99999"); n != 0 || !errors.Is(err, store.ErrNodeNotFound) {
			return fmt.Errorf("unknown node: %d %v", n, err)
		}
		return nil
	},
	"build_tag_links: no overlap / empty tags -> 0": func(t *testing.T, c conformance.Case) error {
		links := BuildLinks([]store.Node{{ID: 1, Triggers: []string{"java"}}, {ID: 2, Triggers: []string{"python"}}, {ID: 3}}, nil)
		if len(links) != 0 {
			return fmt.Errorf("links %+v", links)
		}
		return nil
	},
	"build_tag_links idempotent": func(t *testing.T, c conformance.Case) error {
		s := newSeed(t)
		if err := errors.Join(s.node("", "A", "x"), s.node("", "B", "x")); err != nil {
			return err
		}
		for range 2 {
			if _, err := s.h.RebuildLinks(context.Background()); err != nil {
				return err
			}
		}
		if ls := s.links(); len(ls) != 1 || ls[0].Weight != 1 {
			return fmt.Errorf("links %+v", ls)
		}
		return nil
	},
	"build_crossref_links: nodes sharing a source file": func(t *testing.T, c conformance.Case) error {
		s := newSeed(t)
		if err := errors.Join(s.node("", "A"), s.node("", "B"), s.chunks([][3]string{{"A", "hello", "file1.md"}, {"B", "world", "file1.md"}})); err != nil {
			return err
		}
		rep, err := s.h.RebuildLinks(context.Background())
		ls := s.links()
		if err != nil || rep.CrossRef != 1 || len(ls) != 1 || ls[0].Weight != 1 || ls[0].Evidence != "file1.md" {
			return fmt.Errorf("%+v %+v %v", rep, ls, err)
		}
		return nil
	},
	"build_crossref_links: different sources / same node -> 0": func(t *testing.T, c conformance.Case) error {
		for _, rows := range [][][3]string{{{"A", "a", "file1.md"}, {"B", "b", "file2.md"}}, {{"A", "a", "file1.md"}, {"A", "b", "file1.md"}}} {
			s := newSeed(t)
			if err := errors.Join(s.node("", "A"), s.node("", "B"), s.chunks(rows)); err != nil {
				return err
			}
			if rep, err := s.h.RebuildLinks(context.Background()); err != nil || rep.CrossRef != 0 {
				return fmt.Errorf("%v: %+v %v", rows, rep, err)
			}
		}
		return nil
	},
	"rebuild_links clears all links then builds tag_overlap + cross_ref; idempotent": func(t *testing.T, c conformance.Case) error {
		s := newSeed(t)
		if err := errors.Join(s.node("", "A", "java"), s.node("", "B", "java"), s.chunks([][3]string{{"A", "x", "file1.md"}, {"B", "y", "file1.md"}})); err != nil {
			return err
		}
		for run := range 2 {
			rep, err := s.h.RebuildLinks(context.Background())
			if err != nil || rep != (LinkReport{TagOverlap: 1, CrossRef: 1, Total: 2}) || len(s.links()) != 2 {
				return fmt.Errorf("run %d: %+v %v", run, rep, err)
			}
		}
		return nil
	},
	"rebuild full pipeline": func(t *testing.T, c conformance.Case) error {
		var want map[string]float64
		if err := c.Decode(nil, &want); err != nil {
			return err
		}
		s := newSeed(t)
		if err := errors.Join(s.node("", "A", "web", "api"), s.node("", "B", "api", "rest"), s.node("", "C", "db", "sql"),
			s.chunks([][3]string{{"A", "REST API patterns", "guide.md"}, {"B", "HTTP endpoints", "guide.md"}, {"C", "SQL queries", "db.md"}})); err != nil {
			return err
		}
		if _, err := s.h.RebuildLinks(context.Background()); err != nil {
			return err
		}
		got := map[string]float64{}
		ofC := 0
		for _, l := range s.links() {
			if l.From == s.ids["A"] && l.To == s.ids["B"] {
				got[l.Type] = l.Weight
			}
			if l.From == s.ids["C"] || l.To == s.ids["C"] {
				ofC++
			}
		}
		if !near(got[store.LinkTagOverlap], want["A-B tag_overlap weight"]) || !near(got[store.LinkCrossRef], want["A-B cross_ref weight"]) || ofC != int(want["links_of_C"]) {
			return fmt.Errorf("A-B %v, %d links of C", got, ofC)
		}
		return nil
	},
	"knowledge_neighbors tool: query resolves trigger then exact name then single words; depth default 2 clamp 1..3; limit default 5 clamp 1..20": func(t *testing.T, c conformance.Case) error {
		s := newSeed(t)
		if err := s.node("", "A", "alpha"); err != nil {
			return err
		}
		ctx := context.Background()
		n, err := s.h.FindByTrigger(ctx, "zzz")
		if err != nil || n != nil {
			return fmt.Errorf("trigger zzz: %v %v", n, err)
		}
		if _, err := s.h.Node(ctx, "zzz"); !errors.Is(err, store.ErrNodeNotFound) {
			return fmt.Errorf("name zzz: %v", err)
		}
		if DefaultDepth != 2 || MaxDepth != 3 || DefaultLimit != 5 || MaxLimit != 20 || clamp(0, 2, 1, 3) != 2 || clamp(9, 2, 1, 3) != 3 || clamp(50, 5, 1, 20) != 20 {
			return errors.New("bounds differ")
		}
		return nil
	},
	"health: serious issues & warnings": func(t *testing.T, c conformance.Case) error {
		s := newSeed(t)
		ctx := context.Background()
		if err := s.node("", "Lonely"); err != nil {
			return err
		}
		if err := s.chunks([][3]string{{"Lonely", "  short  ", "a.md"}, {"Lonely", "this chunk text is long enough", "a.md"}}); err != nil {
			return err
		}
		// Lonely keeps its chunks in the seed's count of zero only if
		// they are elsewhere: move them under the root.
		root, _ := s.h.Node(ctx, "/Root")
		atts, _ := s.hs.Attachments(ctx, "kb")
		for i := range atts {
			atts[i].NodeID = root.ID
		}
		if err := s.hs.Attach(ctx, "kb", atts, nil); err != nil {
			return err
		}
		if _, err := s.hs.PutNodes(ctx, "kb", []store.Node{
			{ParentID: 999, Kind: store.NodeFundamental, Name: "X", Path: "/Root/X"},
			{ParentID: root.ID, Kind: store.NodeFundamental, Name: "Dup", Path: "/Root/Dup"},
			{ParentID: root.ID, Kind: store.NodeFundamental, Name: "Dup", Path: "/Root/Dup"},
		}); err != nil {
			return err
		}
		rep, err := s.h.Audit(ctx, AuditOptions{})
		if err != nil {
			return err
		}
		counts := map[string]int{}
		for _, f := range rep.Findings {
			counts[f.Check] = f.Count
		}
		want := map[string]int{CheckBrokenParent: 1, CheckTinyChunks: 1, CheckDuplicateNames: 1, CheckOrphanNodes: 4, CheckNoTriggers: 4}
		if rep.OK || rep.Serious != 3 || !maps(counts, want) {
			return fmt.Errorf("ok %v, serious %d, findings %v", rep.OK, rep.Serious, counts)
		}
		return nil
	},
	"knowledge_link_graph text rendering": func(t *testing.T, c conformance.Case) error {
		var want struct{ Text, Empty string }
		if err := c.Decode(nil, &want); err != nil {
			return err
		}
		var b, e strings.Builder
		l := GraphLink{Link: store.Link{Type: "tag_overlap", Weight: 0.75, Evidence: "shared: x"}, FromName: "A", ToName: "B"}
		if err := errors.Join(WriteGraph(&b, []GraphLink{l}), WriteGraph(&e, nil)); err != nil {
			return err
		}
		if strings.TrimSuffix(b.String(), "\n") != want.Text || strings.TrimSuffix(e.String(), "\n") != want.Empty {
			return fmt.Errorf("got %q and %q", b.String(), e.String())
		}
		return nil
	},
	"status shape": func(t *testing.T, c conformance.Case) error {
		return errors.New("Quarry reports status through knowledge_status and quarry status with its own fields")
	},
}

func maps(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// splitFile chunks a file as ingestion does.
func splitFile(name, content string) ([]*document.Document, error) {
	sp, err := split.NewAuto(split.AutoConfig{})
	if err != nil {
		return nil, err
	}
	d := document.New(content)
	d.SourceType, d.SourceName = document.SourceFile, name
	d.Provenance.Source = name
	return sp.Split(d)
}

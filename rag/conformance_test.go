package rag_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/internal/conformance"
	"github.com/quarry-rag/quarry/rag"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/memory"
)

// elsewhere lists the rag_pipeline cases other packages own, with the
// owner: they run there, not here. A case in neither this list nor the
// checks below fails the test, so a new case is never silently skipped.
var elsewhere = map[string]string{
	"addDocuments: embedded and stored in chunks of chunkSize":                                       "ingest (SEMANTICS §5 Ingestion)",
	"addDocuments: chunkSize 1":                                                                      "ingest (SEMANTICS §5 Ingestion)",
	"addDocuments: default chunkSize is 50":                                                          "ingest (SEMANTICS §5 Ingestion)",
	"addDocuments: no documents touches nothing":                                                     "ingest (SEMANTICS §5 Ingestion)",
	"addDocuments: chunkSize 0 rejected before any work":                                             "ingest (SEMANTICS §5 Ingestion)",
	"reindexBySource stores each source in chunks":                                                   "ingest (SEMANTICS §5 Reindex by source)",
	"reindexBySource: embedding failure mid-way: earlier sources replaced, failing source untouched": "ingest (SEMANTICS §5 Reindex by source)",
	"reindexBySource: digit-like source ids (42,file.txt)":                                           "ingest (SEMANTICS §5 Reindex by source)",
	"SemanticMemoryRetrieval scopes to conversation docs of given threads (deduped ids)":             "retrieve: semantic memory retriever",
	"SemanticMemoryRetrieval: invalid thread lists":                                                  "retrieve: semantic memory retriever",
	"QueryTransformation: single user message delimiting the original query":                         "retrieve: query transforms",
	"FakeEmbeddingsProvider deterministic vector":                                                    "embed: a test double, not behaviour",
}

// elsewherePrefixes are families of cases owned elsewhere.
var elsewherePrefixes = map[string]string{
	"FixedThreshold:":    "rerank: thresholds (SEMANTICS §5 Thresholds)",
	"AdaptiveThreshold:": "rerank: thresholds (SEMANTICS §5 Thresholds)",
	"reranker":           "rerank: providers (SEMANTICS §5 Rerank responses)",
	"score conversion:":  "store backends: scores (storetest)",
}

func ownedElsewhere(name string) string {
	if o, ok := elsewhere[name]; ok {
		return o
	}
	for p, o := range elsewherePrefixes {
		if strings.HasPrefix(name, p) {
			return o
		}
	}
	return ""
}

// TestConformance runs the rag_pipeline cases of SEMANTICS §5 that the
// pipeline owns.
func TestConformance(t *testing.T) {
	var mine []conformance.Case
	for _, c := range conformance.Load(t, "rag_pipeline") {
		if owner := ownedElsewhere(c.Name); owner != "" {
			t.Logf("%s: run by %s", c.Name, owner)
			continue
		}
		mine = append(mine, c)
	}
	diffs := conformance.LoadDifferences(t, filepath.Join("testdata", "conformance_differences.json"))
	conformance.Run(t, mine, diffs, checkCase)
}

func checkCase(c conformance.Case) []conformance.Result {
	switch {
	case strings.HasPrefix(c.Name, "retrieved text cannot close the block"), c.Name == "closing tag fenced keeping its case":
		return blockCase(c)
	case c.Name == "retrieval node: case/whitespace-distinct contents are kept":
		return dedupeCase(c)
	case strings.HasPrefix(c.Name, "retrieval node: scope alone"), strings.HasPrefix(c.Name, "RAG: injected filters"),
		strings.HasPrefix(c.Name, "SimilarityRetrieval ANDs"):
		return filterCase(c)
	case strings.HasPrefix(c.Name, "retrieval node: injected OR"):
		return tenantCase(c)
	case strings.HasPrefix(c.Name, "CompositeRetrieval"):
		return compositeCase(c)
	case strings.HasPrefix(c.Name, "post processors"):
		return postCase(c)
	case strings.HasPrefix(c.Name, "pre processors"):
		return preCase(c)
	case strings.HasPrefix(c.Name, "retrieval query ="):
		return queryCase(c)
	case strings.HasPrefix(c.Name, "QueryTransformation") && strings.HasSuffix(c.Name, "system prompt"):
		return promptTextCase(c)
	}
	return conformance.Fail("no check for this case")
}

func blockCase(c conformance.Case) []conformance.Result {
	var in struct{ Documents []struct{ Content string } }
	var want struct {
		Count    *int
		EndsWith string `json:"ends_with"`
		Contains string `json:"contains"`
		CI       string `json:"contains_ci"`
	}
	// The count's key holds quotes and a comma, which a struct tag cannot.
	var raw map[string]json.RawMessage
	if err := c.Decode(&in, &raw); err != nil {
		return conformance.Of(err)
	}
	if err := c.Decode(nil, &want); err != nil {
		return conformance.Of(err)
	}
	if v, ok := raw["count_of_'</extra-context'_case_insensitive"]; ok {
		want.Count = new(int)
		if err := json.Unmarshal(v, want.Count); err != nil {
			return conformance.Of(err)
		}
	}
	var docs []*document.Document
	for _, d := range in.Documents {
		docs = append(docs, document.New(d.Content))
	}
	p := rag.Prompt("What is the policy?", docs)
	lower := strings.ToLower(p)
	switch {
	case want.Count != nil && strings.Count(lower, "</extra-context") != *want.Count:
		return conformance.Fail("%d closing tags in %q", strings.Count(lower, "</extra-context"), p)
	case want.EndsWith != "" && !strings.HasSuffix(p, want.EndsWith):
		return conformance.Fail("prompt does not end with %q: %q", want.EndsWith, p)
	case want.CI != "" && !strings.Contains(lower, strings.ToLower(want.CI)):
		return conformance.Fail("prompt lost %q: %q", want.CI, p)
	case want.Contains != "" && !strings.Contains(p, want.Contains):
		return conformance.Fail("prompt lacks %q: %q", want.Contains, p)
	}
	return conformance.Pass()
}

func dedupeCase(c conformance.Case) []conformance.Result {
	var in struct{ Retrieved []struct{ Content string } }
	var want struct{ Contents []string }
	if err := c.Decode(&in, &want); err != nil {
		return conformance.Of(err)
	}
	var docs []*document.Document
	for _, d := range in.Retrieved {
		docs = append(docs, document.New(d.Content))
	}
	var got []string
	for _, d := range rag.Dedupe(docs) {
		got = append(got, d.Content)
	}
	if !slices.Equal(got, want.Contents) {
		return conformance.Fail("contents %q, want %q", got, want.Contents)
	}
	return conformance.Pass()
}

// recorder is a memory store that records the filters searches receive.
type recorder struct {
	*memory.Backend
	mu      sync.Mutex
	filters []filter.Expr
}

func (r *recorder) SearchVector(ctx context.Context, coll string, vec []float32, f filter.Expr, k int) ([]*document.Document, error) {
	r.mu.Lock()
	r.filters = append(r.filters, f)
	r.mu.Unlock()
	return r.Backend.SearchVector(ctx, coll, vec, f, k)
}

// scopedKB is a memory collection of documents named "tenant-lang" with
// those two metadata fields, searched by vector so every document matching
// the filter comes back.
func scopedKB(names ...string) (*recorder, *rag.CollectionRetriever, error) {
	ctx := context.Background()
	rec := &recorder{Backend: memory.New()}
	s := store.New(rec)
	schema, err := document.ParseSchema([]byte(`{"fields":[{"name":"tenant","type":"string","required":true,"filterable":true},{"name":"lang","type":"string","filterable":true}]}`))
	if err != nil {
		return nil, nil, err
	}
	k := &kb{store: s}
	emb, err := hashEmbedder()
	if err != nil {
		return nil, nil, err
	}
	k.emb = emb
	if k.coll, err = s.EnsureCollection(ctx, store.CollectionConfig{Name: "docs", Schema: schema, Model: emb.Model()}); err != nil {
		return nil, nil, err
	}
	var docs []*document.Document
	for _, n := range names {
		tenant, lang, _ := strings.Cut(n, "-")
		d := document.New(n)
		d.Metadata = map[string]any{"tenant": tenant, "lang": lang}
		if d.Embedding, err = embedOne(emb, n); err != nil {
			return nil, nil, err
		}
		docs = append(docs, d)
	}
	if len(docs) > 0 {
		if err := k.coll.Upsert(ctx, docs); err != nil {
			return nil, nil, err
		}
	}
	return rec, &rag.CollectionRetriever{Collection: k.coll, Embedder: emb, Mode: store.ModeVector}, nil
}

func parseFilter(raw json.RawMessage) (filter.Expr, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	return filter.ParseJSON(string(raw))
}

func sameFilter(got filter.Expr, want json.RawMessage) error {
	w, err := parseFilter(want)
	if err != nil {
		return err
	}
	gs, _ := filter.Format(got)
	ws, _ := filter.Format(w)
	if gs != ws {
		return fmt.Errorf("filter %s, want %s", gs, ws)
	}
	return nil
}

func filterCase(c conformance.Case) []conformance.Result {
	var in struct {
		Scope      json.RawMessage   `json:"scope"`
		Injected   []json.RawMessage `json:"injected"`
		InjectOnce json.RawMessage   `json:"inject_once"`
		Runs       int               `json:"runs"`
		Own        json.RawMessage   `json:"own"`
		Incoming   json.RawMessage   `json:"incoming"`
	}
	var want struct {
		Filters       json.RawMessage   `json:"filters"`
		SearchFilters []json.RawMessage `json:"search_filters"`
	}
	if err := c.Decode(&in, &want); err != nil {
		return conformance.Of(err)
	}
	rec, ret, err := scopedKB("acme-en")
	if err != nil {
		return conformance.Of(err)
	}
	scope, err := parseFilter(in.Scope)
	if err != nil {
		return conformance.Of(err)
	}
	if ret.Scope, err = parseFilter(in.Own); err != nil {
		return conformance.Of(err)
	}
	var runs []filter.Expr
	switch {
	case in.Runs > 0:
		once, err := parseFilter(in.InjectOnce)
		if err != nil {
			return conformance.Of(err)
		}
		runs = append(runs, once)
		for range in.Runs - 1 {
			runs = append(runs, nil)
		}
	case in.Incoming != nil:
		f, err := parseFilter(in.Incoming)
		if err != nil {
			return conformance.Of(err)
		}
		runs = append(runs, f)
	default:
		var inj []filter.Expr
		for _, raw := range in.Injected {
			f, err := parseFilter(raw)
			if err != nil {
				return conformance.Of(err)
			}
			inj = append(inj, f)
		}
		runs = append(runs, filter.Merge(inj...))
	}
	p := &rag.Pipeline{Retriever: ret, Scope: scope}
	for _, f := range runs {
		if _, err := p.Ask(context.Background(), rag.Request{Question: "anything", Filter: f}); err != nil {
			return conformance.Of(err)
		}
	}
	wants := want.SearchFilters
	if want.Filters != nil {
		wants = []json.RawMessage{want.Filters}
	}
	if len(rec.filters) != len(wants) {
		return conformance.Fail("%d searches, want %d", len(rec.filters), len(wants))
	}
	for i := range wants {
		if err := sameFilter(rec.filters[i], wants[i]); err != nil {
			return conformance.Fail("search %d: %v", i+1, err)
		}
	}
	return conformance.Pass()
}

func tenantCase(c conformance.Case) []conformance.Result {
	var in struct {
		Scope    json.RawMessage   `json:"scope"`
		Injected []json.RawMessage `json:"injected"`
		Docs     []string          `json:"docs"`
	}
	var want struct {
		ContentsSorted []string `json:"contents_sorted"`
	}
	if err := c.Decode(&in, &want); err != nil {
		return conformance.Of(err)
	}
	_, ret, err := scopedKB(in.Docs...)
	if err != nil {
		return conformance.Of(err)
	}
	scope, err := parseFilter(in.Scope)
	if err != nil {
		return conformance.Of(err)
	}
	var inj []filter.Expr
	for _, raw := range in.Injected {
		f, err := parseFilter(raw)
		if err != nil {
			return conformance.Of(err)
		}
		inj = append(inj, f)
	}
	p := &rag.Pipeline{Retriever: ret, Scope: scope}
	a, err := p.Ask(context.Background(), rag.Request{Question: "acme globex en it", Filter: filter.Merge(inj...)})
	if err != nil {
		return conformance.Of(err)
	}
	var got []string
	for _, c := range a.Passages {
		got = append(got, c.Text)
	}
	slices.Sort(got)
	if !slices.Equal(got, want.ContentsSorted) {
		return conformance.Fail("contents %q, want %q", got, want.ContentsSorted)
	}
	return conformance.Pass()
}

func compositeCase(c conformance.Case) []conformance.Result {
	var want struct {
		CompositeReturns   int `json:"composite_returns"`
		ContextOccurrences int `json:"context_occurrences"`
	}
	if err := c.Decode(nil, &want); err != nil {
		return conformance.Of(err)
	}
	// Two children returning the same passage, concatenated in order.
	ret := &staticRetriever{docs: []*document.Document{document.New("Shared context"), document.New("Shared context")}}
	got, _ := ret.Retrieve(context.Background(), rag.RetrieveRequest{})
	model := &fakeModel{reply: "ok"}
	p := &rag.Pipeline{Retriever: ret, Model: model}
	if _, err := p.Ask(context.Background(), rag.Request{Question: "q"}); err != nil {
		return conformance.Of(err)
	}
	n := strings.Count(model.last().Messages[1].Content, "Shared context")
	if len(got) != want.CompositeReturns || n != want.ContextOccurrences {
		return conformance.Fail("retriever returned %d, context holds %d", len(got), n)
	}
	return conformance.Pass()
}

func postCase(c conformance.Case) []conformance.Result {
	var in struct {
		Processors []string
		Documents  []string
	}
	var want struct {
		FirstReceived  []string `json:"first_received"`
		SecondReceived []string `json:"second_received"`
		Result         []string `json:"result"`
	}
	if err := c.Decode(&in, &want); err != nil {
		return conformance.Of(err)
	}
	var docs []*document.Document
	for _, d := range in.Documents {
		docs = append(docs, document.New(d))
	}
	var seen [][]string
	var posts []rag.PostProcessor
	for _, spec := range in.Processors {
		var n int
		if _, err := fmt.Sscanf(spec, "limit %d", &n); err != nil {
			return conformance.Of(err)
		}
		posts = append(posts, limitPost{n, &seen})
	}
	p := &rag.Pipeline{Retriever: &staticRetriever{docs: docs}, PostProcessors: posts}
	a, err := p.Ask(context.Background(), rag.Request{Question: "Question"})
	if err != nil {
		return conformance.Of(err)
	}
	var result []string
	for _, c := range a.Passages {
		result = append(result, c.Text)
	}
	if len(seen) != 2 || !slices.Equal(seen[0][1:], want.FirstReceived) || !slices.Equal(seen[1][1:], want.SecondReceived) ||
		seen[0][0] != seen[1][0] || !slices.Equal(result, want.Result) {
		return conformance.Fail("received %q, result %q", seen, result)
	}
	return conformance.Pass()
}

func preCase(c conformance.Case) []conformance.Result {
	var in struct {
		Processors []string
		Question   string
	}
	var want struct {
		Query     string   `json:"query"`
		Unchanged []string `json:"request_messages_unchanged"`
	}
	if err := c.Decode(&in, &want); err != nil {
		return conformance.Of(err)
	}
	var pres []rag.PreProcessor
	for _, s := range in.Processors {
		pres = append(pres, appendPre(s))
	}
	ret := &staticRetriever{}
	model := &fakeModel{reply: "ok"}
	p := &rag.Pipeline{Retriever: ret, Model: model, PreProcessors: pres}
	if _, err := p.Ask(context.Background(), rag.Request{Question: in.Question}); err != nil {
		return conformance.Of(err)
	}
	var users []string
	for _, m := range model.last().Messages {
		if m.Role == "user" {
			users = append(users, m.Content)
		}
	}
	if ret.reqs[0].Query != want.Query || !slices.Equal(users, want.Unchanged) {
		return conformance.Fail("query %q, user messages %q", ret.reqs[0].Query, users)
	}
	return conformance.Pass()
}

// queryCase maps "start messages" to a thread: the earlier question is in
// its history, the last is asked now, and retrieval searches the last.
func queryCase(c conformance.Case) []conformance.Result {
	var in struct {
		StartMessages []string `json:"start_messages"`
	}
	var want struct{ Query string }
	if err := c.Decode(&in, &want); err != nil {
		return conformance.Of(err)
	}
	threads := store.New(memory.New())
	defer threads.Close()
	ts, _ := threads.Threads()
	var turns []store.Turn
	for _, m := range in.StartMessages[:len(in.StartMessages)-1] {
		turns = append(turns, store.Turn{Role: "user", Content: m, Created: time.Now()}, store.Turn{Role: "assistant", Content: "noted", Created: time.Now()})
	}
	if err := ts.AppendTurns(context.Background(), "t", turns); err != nil {
		return conformance.Of(err)
	}
	ret := &staticRetriever{}
	p := &rag.Pipeline{Retriever: ret, Model: &fakeModel{reply: "ok"}, Threads: ts}
	if _, err := p.Ask(context.Background(), rag.Request{Question: in.StartMessages[len(in.StartMessages)-1], Thread: "t"}); err != nil {
		return conformance.Of(err)
	}
	if ret.reqs[0].Query != want.Query {
		return conformance.Fail("retrieval query %q, want %q", ret.reqs[0].Query, want.Query)
	}
	return conformance.Pass()
}

// quarryPrompts are the prompt texts Quarry sends; they are its own.
var quarryPrompts = []string{rag.Instructions}

func promptTextCase(c conformance.Case) []conformance.Result {
	var want struct {
		SystemPrompt string `json:"system_prompt"`
	}
	if err := c.Decode(nil, &want); err != nil {
		return conformance.Of(err)
	}
	if !slices.Contains(quarryPrompts, want.SystemPrompt) {
		return conformance.Fail("no Quarry prompt is the seed's text")
	}
	return conformance.Pass()
}

package retrieve_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/internal/conformance"
	"github.com/quarry-rag/quarry/llm"
	"github.com/quarry-rag/quarry/retrieve"
	"github.com/quarry-rag/quarry/store"
)

// TestConformance runs the rag_pipeline cases of semantic memory and the
// query transforms' message shape.
func TestConformance(t *testing.T) {
	var mine []conformance.Case
	for _, c := range conformance.Load(t, "rag_pipeline") {
		switch c.Name {
		case "SemanticMemoryRetrieval scopes to conversation docs of given threads (deduped ids)",
			"SemanticMemoryRetrieval: invalid thread lists",
			"QueryTransformation: single user message delimiting the original query":
			mine = append(mine, c)
		}
	}
	if len(mine) != 3 {
		t.Fatalf("%d cases found, want 3", len(mine))
	}
	conformance.Run(t, mine, nil, func(c conformance.Case) []conformance.Result {
		switch c.Name {
		case "SemanticMemoryRetrieval: invalid thread lists":
			return invalidThreads(c)
		case "QueryTransformation: single user message delimiting the original query":
			return transformMessage(c)
		}
		return memoryScope(c)
	})
}

func memoryScope(c conformance.Case) []conformance.Result {
	var in struct {
		Store   [][3]string
		Threads []string `json:"threadIds"`
	}
	var want struct {
		Filter   json.RawMessage
		Contents []string `json:"contents_any_order"`
		Narrowed int
		Other    int
	}
	// Two keys hold a comma, which a struct tag cannot.
	var raw map[string]json.RawMessage
	if err := c.Decode(&in, &want); err != nil {
		return conformance.Of(err)
	}
	if err := c.Decode(nil, &raw); err != nil {
		return conformance.Of(err)
	}
	if json.Unmarshal(raw["narrowed_by_eq(sourceName,thread-2)"], &want.Narrowed) != nil ||
		json.Unmarshal(raw["eq(sourceName,thread-3)"], &want.Other) != nil {
		return conformance.Fail("the case lacks its counts")
	}
	f, err := retrieve.MemoryFilter(in.Threads)
	if err != nil {
		return conformance.Of(err)
	}
	wf, err := filter.ParseJSON(string(want.Filter))
	if err != nil {
		return conformance.Of(err)
	}
	a, _ := filter.Format(f)
	b, _ := filter.Format(wf)
	if a != b {
		return conformance.Fail("filter %s, want %s", a, b)
	}
	var docs []*document.Document
	for _, d := range in.Store {
		docs = append(docs, doc(d[0], d[1], d[2]))
	}
	coll, emb, closeFn, err := buildColl(nil, docs...)
	if err != nil {
		return conformance.Of(err)
	}
	defer closeFn()
	mem := &retrieve.Memory{Retriever: &retrieve.Collection{Collection: coll, Embedder: emb, Mode: store.ModeVector}}
	r, err := mem.For(in.Threads)
	if err != nil {
		return conformance.Of(err)
	}
	ctx := context.Background()
	count := func(extra filter.Expr) ([]string, error) {
		got, err := r.Retrieve(ctx, retrieve.Request{Query: "thread", Filter: extra, TopK: 10})
		return contents(got), err
	}
	got, err := count(nil)
	if err != nil {
		return conformance.Of(err)
	}
	slices.Sort(got)
	if !slices.Equal(got, want.Contents) {
		return conformance.Fail("contents %v, want %v", got, want.Contents)
	}
	if got, _ := count(filter.Eq("sourceName", "thread-2")); len(got) != want.Narrowed {
		return conformance.Fail("narrowed to thread-2: %v", got)
	}
	if got, _ := count(filter.Eq("sourceName", "thread-3")); len(got) != want.Other {
		return conformance.Fail("thread-3 reached: %v", got)
	}
	return conformance.Pass()
}

func invalidThreads(c conformance.Case) []conformance.Result {
	var in struct{ Cases [][]any }
	if err := c.Decode(&in, nil); err != nil {
		return conformance.Of(err)
	}
	var res []conformance.Result
	for i, tc := range in.Cases {
		var ids []string
		typed := true
		for _, v := range tc {
			s, ok := v.(string)
			if !ok {
				typed = false // a non-string id cannot be written in Go
				break
			}
			ids = append(ids, s)
		}
		r := conformance.Result{Sub: []string{"empty", "empty id", "non-string id"}[i]}
		if typed {
			_, err := retrieve.MemoryFilter(ids)
			want := retrieve.ErrEmptyThread
			if len(ids) == 0 {
				want = retrieve.ErrNoThreads
			}
			if !errors.Is(err, want) {
				r.Err = errors.New("error " + errString(err) + ", want " + want.Error())
			}
		}
		res = append(res, r)
	}
	return res
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func transformMessage(c conformance.Case) []conformance.Result {
	var in struct{ Query string }
	var want struct {
		Messages []struct{ Role, Content string }
	}
	if err := c.Decode(&in, &want); err != nil {
		return conformance.Of(err)
	}
	m := fixed("the rewritten query")
	q, err := retrieve.Rewrite{Model: m}.Rewrite(context.Background(), in.Query, nil)
	if err != nil {
		return conformance.Of(err)
	}
	if q != "the rewritten query" {
		return conformance.Fail("retrieval query %q, want the model's reply", q)
	}
	req := m.reqs[0]
	// Quarry's own instructions ride in a system message; the query is the
	// single user message, as the case has it.
	var users []llm.Message
	for _, msg := range req.Messages {
		if msg.Role != llm.RoleSystem {
			users = append(users, msg)
		}
	}
	if len(users) != 1 || string(users[0].Role) != want.Messages[0].Role || users[0].Content != want.Messages[0].Content || len(req.Tools) != 0 {
		return conformance.Fail("messages %+v", req.Messages)
	}
	return conformance.Pass()
}

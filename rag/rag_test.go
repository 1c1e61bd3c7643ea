package rag_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/llm"
	"github.com/quarry-rag/quarry/rag"
	"github.com/quarry-rag/quarry/store"
)

// staticRetriever returns the same documents for every query and records
// the requests.
type staticRetriever struct {
	docs []*document.Document
	reqs []rag.RetrieveRequest
}

func (r *staticRetriever) Retrieve(_ context.Context, req rag.RetrieveRequest) ([]*document.Document, error) {
	r.reqs = append(r.reqs, req)
	return slices.Clone(r.docs), nil
}

func threePassages() []*document.Document {
	refunds := sourced("Refunds are paid within five days of the return.", "policies/refunds.md", "Refunds")
	gift := sourced("Gift cards are never refunded.", "policies/refunds.md", "Refunds", "Gift cards")
	ship := sourced("Shipping takes two days.", "policies/shipping.md", "Shipping")
	dup := sourced("Refunds are paid within five days of the return.", "copies/refunds.md")
	return []*document.Document{refunds, gift, dup, ship}
}

func TestAskResolvesCitations(t *testing.T) {
	model := &fakeModel{reply: "Refunds take five days [1]. Gift cards are never refunded [2][9]. Shipping is quick [7]."}
	ret := &staticRetriever{docs: threePassages()}
	p := &rag.Pipeline{Retriever: ret, Model: model}
	a, err := p.Ask(context.Background(), rag.Request{Question: "How do refunds work?"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Text != "Refunds take five days [1]. Gift cards are never refunded [2]. Shipping is quick." {
		t.Errorf("text %q", a.Text)
	}
	if len(a.Passages) != 3 {
		t.Fatalf("the duplicate passage was not dropped: %d passages", len(a.Passages))
	}
	if len(a.Citations) != 2 || a.Citations[0].N != 1 || a.Citations[1].N != 2 {
		t.Fatalf("citations %+v", a.Citations)
	}
	c := a.Citations[1]
	if c.Source != "policies/refunds.md" || c.SourceType != "file" || !slices.Equal(c.Headings, []string{"Refunds", "Gift cards"}) ||
		c.LineStart != 1 || c.LineEnd != 3 || c.Text != "Gift cards are never refunded." || c.Document == nil {
		t.Errorf("citation 2: %+v", c)
	}
	if c.Location() != "policies/refunds.md · Refunds › Gift cards · lines 1-3" {
		t.Errorf("location %q", c.Location())
	}
	req := model.last()
	if len(req.Messages) != 2 || req.Messages[0].Content != rag.Instructions || req.Messages[1].Role != llm.RoleUser {
		t.Fatalf("messages %+v", req.Messages)
	}
	if want := rag.Prompt("How do refunds work?", []*document.Document{ret.docs[0], ret.docs[1], ret.docs[3]}); req.Messages[1].Content != want {
		t.Errorf("user turn\n got %q\nwant %q", req.Messages[1].Content, want)
	}
	if a.Usage.InputTokens != 100 || a.Extractive {
		t.Errorf("answer %+v", a)
	}
}

// TestStreamMatchesAsk streams the same reply in pieces of every size: the
// text pieces add up to the answer, and the citations are the ones Ask
// gives.
func TestStreamMatchesAsk(t *testing.T) {
	reply := "Refunds take five days [1]. Gift cards [2, 9] are never refunded [9]. Code `a[9]` stays [3]."
	model := &fakeModel{reply: reply}
	p := &rag.Pipeline{Retriever: &staticRetriever{docs: threePassages()}, Model: model}
	whole, err := p.Ask(context.Background(), rag.Request{Question: "refunds?"})
	if err != nil {
		t.Fatal(err)
	}
	wantCites, _ := json.Marshal(whole.Citations)
	for chunk := 1; chunk <= 9; chunk++ {
		model.chunk = chunk
		var text strings.Builder
		var final *rag.Answer
		pieces := 0
		for ev, err := range p.Stream(context.Background(), rag.Request{Question: "refunds?"}) {
			if err != nil {
				t.Fatal(err)
			}
			if ev.Answer != nil {
				final = ev.Answer
				continue
			}
			text.WriteString(ev.Text)
			pieces++
			if strings.Contains(strings.ReplaceAll(text.String(), "`a[9", ""), "[9") {
				t.Fatalf("chunk %d: an invalid marker reached the reader: %q", chunk, text.String())
			}
		}
		gotCites, _ := json.Marshal(final.Citations)
		if text.String() != whole.Text || final.Text != whole.Text || string(gotCites) != string(wantCites) {
			t.Errorf("chunk %d:\nstreamed %q\n   whole %q\ncitations %s vs %s", chunk, text.String(), whole.Text, gotCites, wantCites)
		}
		if chunk == 1 && pieces < 10 {
			t.Errorf("the answer did not stream: %d pieces", pieces)
		}
	}
	// Stopping early is clean.
	for range p.Stream(context.Background(), rag.Request{Question: "refunds?"}) {
		break
	}
}

func TestThreadsKeepQuestionsNotPassages(t *testing.T) {
	k := newKB(t, nil)
	model := &fakeModel{reply: "Five days [1]."}
	p := &rag.Pipeline{Retriever: &staticRetriever{docs: threePassages()}, Model: model, Threads: k.threads(t)}
	ctx := context.Background()
	if _, err := p.Ask(ctx, rag.Request{Question: "How fast are refunds?", Thread: "th-1"}); err != nil {
		t.Fatal(err)
	}
	a, err := p.Ask(ctx, rag.Request{Question: "And gift cards?", Thread: "th-1"})
	if err != nil || a.Thread != "th-1" {
		t.Fatal(a, err)
	}
	msgs := model.last().Messages
	roles := []string{}
	for _, m := range msgs {
		roles = append(roles, string(m.Role))
	}
	if strings.Join(roles, ",") != "system,user,assistant,user" || msgs[1].Content != "How fast are refunds?" || msgs[2].Content != "Five days [1]." {
		t.Errorf("history sent: %v %+v", roles, msgs)
	}
	if !strings.HasPrefix(msgs[3].Content, "And gift cards?\n\n<EXTRA-CONTEXT>") {
		t.Errorf("the new question lost its passages: %q", msgs[3].Content)
	}
	turns, err := k.threads(t).Turns(ctx, "th-1", 0)
	if err != nil || len(turns) != 4 {
		t.Fatalf("turns %+v %v", turns, err)
	}
	for _, turn := range turns {
		all := turn.Content + string(turn.Data)
		if strings.Contains(all, "EXTRA-CONTEXT") || strings.Contains(all, "paid within five days") {
			t.Errorf("a passage was stored in the thread: %+v", turn)
		}
	}
	var data struct {
		Citations []rag.Citation `json:"citations"`
	}
	if err := json.Unmarshal(turns[1].Data, &data); err != nil || len(data.Citations) != 1 || data.Citations[0].Source != "policies/refunds.md" {
		t.Errorf("citations kept with the answer: %s %v", turns[1].Data, err)
	}
	// A pipeline without thread storage refuses a thread rather than
	// forgetting silently.
	p.Threads = nil
	if _, err := p.Ask(ctx, rag.Request{Question: "x", Thread: "th-1"}); !errors.Is(err, store.ErrUnsupported) {
		t.Errorf("thread without a store: %v", err)
	}
}

func TestStructuredAnswer(t *testing.T) {
	model := &fakeModel{reply: `{"answer":"Five days [1] [5].","sources":["refunds [2]"]}`}
	schema := &llm.Schema{Schema: json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"},"sources":{"type":"array","items":{"type":"string"}}}}`)}
	p := &rag.Pipeline{Retriever: &staticRetriever{docs: threePassages()}, Model: model}
	a, err := p.Ask(context.Background(), rag.Request{Question: "refunds?", Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if string(a.JSON) != `{"answer":"Five days [1].","sources":["refunds [2]"]}` || a.Text != string(a.JSON) || len(a.Citations) != 2 {
		t.Errorf("structured answer %s, %d citations", a.JSON, len(a.Citations))
	}
	if model.last().Schema != schema {
		t.Error("the schema did not reach the model")
	}
	// Streamed, a structured answer arrives whole.
	var got []rag.Event
	for ev, err := range p.Stream(context.Background(), rag.Request{Question: "refunds?", Schema: schema}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
	if len(got) != 2 || got[0].Text != a.Text || string(got[1].Answer.JSON) != string(a.JSON) {
		t.Errorf("streamed structured answer: %+v", got)
	}
	model.reply = "I think it is five days."
	if _, err := p.Ask(context.Background(), rag.Request{Question: "refunds?", Schema: schema}); err == nil || !strings.Contains(err.Error(), "not JSON") {
		t.Errorf("prose for a schema: %v", err)
	}
	extractive := &rag.Pipeline{Retriever: &staticRetriever{docs: threePassages()}}
	if _, err := extractive.Ask(context.Background(), rag.Request{Question: "refunds?", Schema: schema}); !errors.Is(err, rag.ErrNeedsModel) {
		t.Errorf("schema without a model: %v", err)
	}
}

func TestNoPassagesNoBlock(t *testing.T) {
	model := &fakeModel{reply: "The knowledge base has nothing on that [1]."}
	p := &rag.Pipeline{Retriever: &staticRetriever{}, Model: model}
	a, err := p.Ask(context.Background(), rag.Request{Question: "What is the moon made of?"})
	if err != nil {
		t.Fatal(err)
	}
	if u := model.last().Messages[1].Content; u != "What is the moon made of?" {
		t.Errorf("user turn without passages: %q", u)
	}
	if a.Text != "The knowledge base has nothing on that." || len(a.Citations) != 0 {
		t.Errorf("answer %+v", a)
	}
}

type appendPre string

func (s appendPre) Rewrite(_ context.Context, q string, _ []llm.Message) (string, error) {
	return q + string(s), nil
}

type limitPost struct {
	n    int
	seen *[][]string
}

func (l limitPost) Process(_ context.Context, question string, docs []*document.Document) ([]*document.Document, error) {
	var got []string
	for _, d := range docs {
		got = append(got, d.Content)
	}
	*l.seen = append(*l.seen, append([]string{question}, got...))
	return docs[:min(l.n, len(docs))], nil
}

func TestProcessorsRunInOrder(t *testing.T) {
	model := &fakeModel{reply: "ok"}
	ret := &staticRetriever{docs: threePassages()}
	var seen [][]string
	p := &rag.Pipeline{Retriever: ret, Model: model,
		PreProcessors:  []rag.PreProcessor{appendPre(" expanded"), appendPre(" rewritten")},
		PostProcessors: []rag.PostProcessor{limitPost{2, &seen}, limitPost{1, &seen}}}
	a, err := p.Ask(context.Background(), rag.Request{Question: "Question"})
	if err != nil {
		t.Fatal(err)
	}
	if ret.reqs[0].Query != "Question expanded rewritten" || a.Query != "Question expanded rewritten" {
		t.Errorf("retrieval query %q", ret.reqs[0].Query)
	}
	if !strings.HasPrefix(model.last().Messages[1].Content, "Question\n\n") {
		t.Errorf("the user's question was rewritten: %q", model.last().Messages[1].Content)
	}
	if len(seen) != 2 || len(seen[0]) != 4 || len(seen[1]) != 3 || seen[1][0] != "Question" || len(a.Passages) != 1 {
		t.Errorf("post-processors saw %q, kept %d", seen, len(a.Passages))
	}
}

func tenantSchema(t *testing.T) *document.Schema {
	t.Helper()
	s, err := document.ParseSchema([]byte(`{"fields":[{"name":"tenant","type":"string","required":true,"filterable":true},{"name":"lang","type":"string","filterable":true}]}`))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestScopesNeverWiden combines a configured tenant scope with per-run
// filters, including an "or" naming another tenant: no answer may ever
// rest on another tenant's passage, in the passages or the citations.
func TestScopesNeverWiden(t *testing.T) {
	var docs []*document.Document
	for _, tenant := range []string{"acme", "globex"} {
		for _, lang := range []string{"en", "it"} {
			d := sourced(fmt.Sprintf("The refund policy of %s in %s: refunds take five days.", tenant, lang), tenant+"-"+lang+".md")
			d.Metadata = map[string]any{"tenant": tenant, "lang": lang}
			docs = append(docs, d)
		}
	}
	k := newKB(t, tenantSchema(t), docs...)
	for _, run := range []struct {
		name   string
		filter filter.Expr
		want   []string
	}{
		{"no per-run filter", nil, []string{"acme-en.md", "acme-it.md"}},
		{"or naming another tenant", filter.Or(filter.Eq("tenant", "globex"), filter.Eq("lang", "en")), []string{"acme-en.md"}},
		{"another tenant outright", filter.Eq("tenant", "globex"), nil},
	} {
		for _, mode := range []string{"vector", "keyword", "hybrid"} {
			for _, model := range []llm.ChatModel{nil, &fakeModel{reply: "Five days [1][2][3][4]."}} {
				p := &rag.Pipeline{
					Retriever: &rag.CollectionRetriever{Collection: k.coll, Embedder: k.emb, Mode: store.Mode(mode)},
					Scope:     filter.Eq("tenant", "acme"),
					Model:     model,
				}
				a, err := p.Ask(context.Background(), rag.Request{Question: "refund policy five days", Filter: run.filter})
				if err != nil {
					t.Fatalf("%s %s: %v", run.name, mode, err)
				}
				var got []string
				for _, c := range a.Passages {
					got = append(got, c.Source)
				}
				slices.Sort(got)
				if !slices.Equal(got, run.want) {
					t.Errorf("%s, %s, model %v: passages %v, want %v", run.name, mode, model != nil, got, run.want)
				}
				for _, c := range a.Citations {
					if c.Document.Metadata["tenant"] != "acme" {
						t.Errorf("%s: cited another tenant: %+v", run.name, c)
					}
				}
			}
		}
	}
	// A filter on an undeclared field fails before any search.
	p := &rag.Pipeline{Retriever: &rag.CollectionRetriever{Collection: k.coll, Embedder: k.emb}}
	if _, err := p.Ask(context.Background(), rag.Request{Question: "x", Filter: filter.Eq("year", 2025)}); err == nil || !strings.Contains(err.Error(), "year") {
		t.Errorf("undeclared field: %v", err)
	}
}

func TestRequestChecked(t *testing.T) {
	p := &rag.Pipeline{Retriever: &staticRetriever{}}
	for _, tc := range []struct {
		req  rag.Request
		want string
	}{
		{rag.Request{Question: "  "}, "empty"},
		{rag.Request{Question: "x", Thread: "t"}, "keeps no threads"},
	} {
		if _, err := p.Ask(context.Background(), tc.req); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v", tc.req, err)
		}
	}
	p.Threads = newKB(t, nil).threads(t)
	if _, err := p.Ask(context.Background(), rag.Request{Question: "x", Thread: "has space"}); !errors.Is(err, store.ErrInvalidRequest) {
		t.Errorf("bad thread id: %v", err)
	}
	if _, err := (&rag.Pipeline{}).Ask(context.Background(), rag.Request{Question: "x"}); err == nil {
		t.Error("a pipeline without a retriever answered")
	}
}

package quarry_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/agent"
	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/llm"
	"github.com/quarry-rag/quarry/quarrytest"
)

// tenants is a knowledge base holding two tenants' documents in one
// collection and a third tenant's in another.
func tenants(t *testing.T, opts ...quarry.Option) *quarry.KB {
	t.Helper()
	ctx := context.Background()
	kb := quarrytest.NewKB(t, append([]quarry.Option{quarry.WithCollection("kb")}, opts...)...)
	schema := &document.Schema{Fields: []document.Field{{Name: "tenant", Type: document.TypeString, Filterable: true}}}
	for _, name := range []string{"kb", "other"} {
		if _, err := kb.CreateCollection(ctx, quarry.Developer(), quarry.NewCollectionRequest{Name: name, Schema: schema}); err != nil {
			t.Fatal(err)
		}
	}
	add := func(coll string, docs ...quarry.NewDocument) {
		if _, err := kb.AddDocuments(ctx, quarry.Developer(), coll, docs); err != nil {
			t.Fatal(err)
		}
	}
	add("kb",
		quarry.NewDocument{ID: "a1", Text: "Acme refunds are paid within fourteen days.", Source: "acme.md", Metadata: map[string]any{"tenant": "acme"}},
		quarry.NewDocument{ID: "a2", Text: "Acme gift cards cannot be refunded.", Source: "acme.md", Metadata: map[string]any{"tenant": "acme"}},
		quarry.NewDocument{ID: "g1", Text: "Globex refunds are paid within two days, and Globex gift cards are refunded in cash.", Source: "globex.md", Metadata: map[string]any{"tenant": "globex"}},
	)
	add("other", quarry.NewDocument{ID: "i1", Text: "Initech refunds and gift cards: never.", Source: "initech.md", Metadata: map[string]any{"tenant": "initech"}})
	return kb
}

// TestAgentHoldsTheScope is the adversarial case: the model asks for
// another tenant's documents with an $or filter, a raw fragment, another
// collection and an expansion of an id it was never shown; every call runs
// under the caller's scope or is refused, and nothing outside the scope
// reaches a tool result, the gathered passages or the answer.
func TestAgentHoldsTheScope(t *testing.T) {
	var mu sync.Mutex
	round := 0
	m := &quarrytest.ChatModel{Respond: func(req llm.Request) (llm.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case req.Schema != nil && req.Schema.Name == "triage":
			return llm.Response{Text: `{"kind":"multi_step","aspects":["refunds","gift cards"],"sources":["kb"]}`}, nil
		case req.Schema != nil && req.Schema.Name == "verdict":
			return llm.Response{Text: `{"sufficient":true,"missing":"","next_query":""}`}, nil
		case len(req.Tools) > 0 && round == 0:
			round++
			return llm.Response{ToolCalls: []llm.ToolCall{
				{ID: "c1", Name: agent.ToolSearch, Arguments: json.RawMessage(`{"query":"refunds gift cards","filter":"tenant = 'globex' OR tenant = 'acme'"}`)},
				{ID: "c2", Name: agent.ToolSearch, Arguments: json.RawMessage(`{"query":"refunds","filter":{"operator":"eq","field":"tenant","value":"globex"}}`)},
				{ID: "c3", Name: agent.ToolSearch, Arguments: json.RawMessage(`{"query":"refunds","source":"other"}`)},
				{ID: "c4", Name: agent.ToolSearch, Arguments: json.RawMessage(`{"query":"refunds","filter":{"operator":"raw","store":"memory","fragment":"1=1"}}`)},
				{ID: "c5", Name: agent.ToolNeighbours, Arguments: json.RawMessage(`{"id":"g1"}`)},
				{ID: "c6", Name: agent.ToolSearch, Arguments: json.RawMessage(`{"query":"refunds","mode":"keyword"}`)},
			}}, nil
		case len(req.Tools) > 0:
			return llm.Response{Text: "DONE"}, nil
		}
		return llm.Response{Text: "Refunds take fourteen days [1]; gift cards are not refunded [2]."}, nil
	}}
	kb := tenants(t, quarry.WithChatModel(m))
	sc := quarry.Scope{Filter: filter.Eq("tenant", "acme"), AllowRawFilters: true}
	ans, err := kb.Ask(context.Background(), sc, quarry.AskRequest{Question: "How long do refunds take and are gift cards refunded?", Agent: true})
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{"a1": true, "a2": true}
	refused := map[string]string{}
	for _, s := range ans.Agent.Steps {
		if s.Result == nil {
			continue
		}
		for _, id := range s.Result.IDs {
			if !allowed[id] {
				t.Errorf("call %s returned %s, outside the caller's scope", s.Result.ID, id)
			}
		}
		if s.Result.Error != "" {
			refused[s.Result.ID] = s.Result.Error
		}
	}
	got := map[string][]string{}
	for _, s := range ans.Agent.Steps {
		if s.Result != nil {
			got[s.Result.ID] = s.Result.IDs
		}
	}
	if len(got["c1"]) == 0 || len(got["c2"]) != 0 || len(got["c6"]) == 0 {
		t.Errorf("results: %v", got)
	}
	for _, id := range []string{"c3", "c4", "c5"} {
		if refused[id] == "" {
			t.Errorf("call %s was not refused", id)
		}
	}
	for _, c := range ans.Citations {
		if !allowed[c.ID] {
			t.Errorf("the answer cites %s, outside the caller's scope", c.ID)
		}
	}
	if len(ans.Citations) == 0 || ans.Abstained {
		t.Errorf("the answer cites nothing: %+v", ans)
	}
	// The tool results the model read name no other tenant's text.
	for _, r := range m.Requests() {
		for _, msg := range r.Messages {
			if msg.Role == llm.RoleTool && (strings.Contains(msg.Content, "Globex") || strings.Contains(msg.Content, "Initech")) {
				t.Errorf("a tool result showed the model another tenant's passage: %s", msg.Content)
			}
		}
	}
}

// TestAgentAsk: the offline agent's answer streamed and whole are the
// same, with one step event per recorded step; a question it cannot
// answer abstains, says what it searched and is kept in the thread with
// the run; transforms are refused.
func TestAgentAsk(t *testing.T) {
	ctx := context.Background()
	kb := tenants(t)
	sc := quarry.Developer()
	req := quarry.AskRequest{Question: "How long do Acme refunds take, and can Acme gift cards be refunded?", Agent: true}
	whole, err := kb.Ask(ctx, sc, req)
	if err != nil {
		t.Fatal(err)
	}
	events, err := kb.AskStream(ctx, sc, req)
	if err != nil {
		t.Fatal(err)
	}
	var steps int
	var streamed *quarry.AskResult
	for ev, err := range events {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Step != nil {
			steps++
		}
		if ev.Result != nil {
			streamed = ev.Result
		}
	}
	if streamed == nil || streamed.Answer != whole.Answer || !slices.EqualFunc(streamed.Citations, whole.Citations, func(a, b quarry.Passage) bool { return a.ID == b.ID }) {
		t.Fatalf("streamed %+v\nwhole %+v", streamed, whole)
	}
	if steps == 0 || steps != len(streamed.Agent.Steps) {
		t.Errorf("%d step events for %d steps", steps, len(streamed.Agent.Steps))
	}
	if whole.Agent.Triage.Kind != agent.KindMultiStep || !whole.Agent.Sufficient || len(whole.Queries) < 2 {
		t.Errorf("run %+v", whole.Agent)
	}
	cited := map[string]bool{}
	for _, c := range whole.Citations {
		cited[c.ID] = true
	}
	if !cited["a1"] || !cited["a2"] {
		t.Errorf("cited %v, want both Acme passages", cited)
	}

	off, err := kb.Ask(ctx, sc, quarry.AskRequest{Question: "What is the capital of France?", Agent: true, Thread: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	if !off.Abstained || len(off.Citations) != 0 || !strings.Contains(off.Answer, "Searched:") {
		t.Errorf("off-topic answer %+v", off)
	}
	ts, err := kb.Store().Threads()
	if err != nil {
		t.Fatal(err)
	}
	turns, err := ts.Turns(ctx, "t1", 0)
	if err != nil || len(turns) != 2 || !strings.Contains(string(turns[1].Data), `"agent"`) || turns[1].Content != off.Answer {
		t.Errorf("thread turns %+v (%v)", turns, err)
	}
	if _, err := kb.Ask(ctx, sc, quarry.AskRequest{Question: "x", Agent: true, Transforms: []string{"rewrite"}}); !errors.Is(err, quarry.ErrInvalid) {
		t.Errorf("transforms with an agent: %v", err)
	}
	hi, err := kb.Ask(ctx, sc, quarry.AskRequest{Question: "Hello!", Agent: true})
	if err != nil || hi.Answer != agent.NothingToLookUp || hi.Agent.ToolCalls != 0 {
		t.Errorf("a greeting: %+v %v", hi, err)
	}
}

// TestAgentAskWithModel: with a chat model, the streamed and the whole
// answer cite the same passages, and a run whose judge never finds the
// passages sufficient abstains at its budget without asking the model for
// an answer.
func TestAgentAskWithModel(t *testing.T) {
	verdict := `{"sufficient":true,"missing":"","next_query":""}`
	var mu sync.Mutex
	answers := 0
	m := &quarrytest.ChatModel{Respond: func(req llm.Request) (llm.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case req.Schema != nil && req.Schema.Name == "triage":
			return llm.Response{Text: `{"kind":"lookup","aspects":["Acme refunds"],"sources":["kb"]}`}, nil
		case req.Schema != nil && req.Schema.Name == "verdict":
			return llm.Response{Text: verdict}, nil
		case len(req.Tools) > 0:
			for _, msg := range req.Messages {
				if msg.Role == llm.RoleTool {
					return llm.Response{Text: "DONE"}, nil
				}
			}
			return llm.Response{ToolCalls: []llm.ToolCall{{ID: "s1", Name: agent.ToolSearch, Arguments: json.RawMessage(`{"query":"Acme refunds paid"}`)}}}, nil
		}
		answers++
		return llm.Response{Text: "Refunds take fourteen days [1]."}, nil
	}}
	kb := tenants(t, quarry.WithChatModel(m))
	ctx := context.Background()
	req := quarry.AskRequest{Question: "How long do Acme refunds take?", Agent: true}
	whole, err := kb.Ask(ctx, quarry.Developer(), req)
	if err != nil {
		t.Fatal(err)
	}
	events, err := kb.AskStream(ctx, quarry.Developer(), req)
	if err != nil {
		t.Fatal(err)
	}
	var streamed *quarry.AskResult
	var text strings.Builder
	for ev, err := range events {
		if err != nil {
			t.Fatal(err)
		}
		text.WriteString(ev.Text)
		if ev.Result != nil {
			streamed = ev.Result
		}
	}
	if whole.Abstained || len(whole.Citations) != 1 || whole.Citations[0].ID != "a1" || whole.Agent.Triage.By != "model" {
		t.Fatalf("whole: %+v", whole)
	}
	if streamed == nil || text.String() != whole.Answer || len(streamed.Citations) != 1 || streamed.Citations[0].ID != whole.Citations[0].ID {
		t.Errorf("streamed %q %+v, whole %q %+v", text.String(), streamed, whole.Answer, whole.Citations)
	}
	if whole.Usage.Total() <= 0 || whole.Usage.Total() <= whole.Agent.Usage.Total() {
		t.Errorf("usage %+v should add the agent's %+v to the answer's", whole.Usage, whole.Agent.Usage)
	}

	mu.Lock()
	verdict, answers = `{"sufficient":false,"missing":"the refund deadline","next_query":"refund deadline"}`, 0
	mu.Unlock()
	ab, err := kb.Ask(ctx, quarry.Developer(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !ab.Abstained || len(ab.Citations) != 0 || !strings.Contains(ab.Answer, "the refund deadline") || ab.Agent.Stopped != "budget: rounds" || answers != 0 {
		t.Errorf("an insufficient run: %+v (the model answered %d times)", ab, answers)
	}
}

// TestAgentWebUnderScope: the web and the graph are searched under the
// caller's scope too, so a tenant-scoped caller gets no web passage (they
// carry no tenant), as without the agent.
func TestAgentWebUnderScope(t *testing.T) {
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"results":[{"url":"https://example.com/moon","title":"Moon parcels","content":"Parcels to the moon cost ninety credits.","score":1}]}`)
	}))
	defer web.Close()
	kb := tenants(t, quarry.WithWeb(web.URL, 0))
	ctx := context.Background()
	q := quarry.AskRequest{Question: "What do parcels to the moon cost?", Agent: true, MinRelevance: -1}
	open, err := kb.Ask(ctx, quarry.Developer(), q)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fmt.Sprint(open.Agent.Steps), "https://example.com/moon") && !slices.ContainsFunc(open.Citations, func(p quarry.Passage) bool { return p.SourceType == "web" }) {
		t.Fatalf("the developer's agent found nothing on the web: %+v", open.Agent)
	}
	sc := quarry.Scope{Filter: filter.Eq("tenant", "acme")}
	ans, err := kb.Ask(ctx, sc, q)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ans.Agent.Steps {
		if s.Result != nil && slices.Contains(s.Result.IDs, "https://example.com/moon") {
			t.Errorf("a tenant-scoped agent got a web passage: %+v", s.Result)
		}
	}
}

package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/llm"
)

// The tools the model may call.
const (
	ToolSearch     = "search"
	ToolNeighbours = "neighbours"
	ToolLinked     = "linked"
	ToolDocument   = "document"
)

// Instructions are the system prompt of the tool rounds.
const Instructions = "You gather passages that answer a user's question from the sources listed below, by calling tools. " +
	"Search for each part of the question separately; when a passage looks close to the answer, fetch its neighbouring chunks " +
	"or the sections linked to it. Passages are shown as [id] location: text. Use only ids you were shown. " +
	"Do not answer the question yourself: when you hold what is needed, reply with the single word DONE."

// triagePrompt asks the model to classify the question.
const triagePrompt = "Classify the question for retrieval. kind is \"none\" when it needs no lookup (a greeting, thanks), " +
	"\"lookup\" when one search should find the answer, \"multi_step\" when it has several parts to find separately. " +
	"aspects are the parts to search for, as short standalone queries (one for a lookup, none for none). " +
	"sources are the names of the sources worth searching first."

// judgePrompt is the sufficiency rubric.
const judgePrompt = "Judge whether the passages below are enough to answer every part of the question, with citations. " +
	"sufficient is true only if each part is answered by some passage. missing says briefly what is not covered; " +
	"next_query is the search that would most likely find it (empty when sufficient)."

var triageSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"kind":{"type":"string","enum":["none","lookup","multi_step"]},` +
	`"aspects":{"type":"array","items":{"type":"string"}},` +
	`"sources":{"type":"array","items":{"type":"string"}}},` +
	`"required":["kind","aspects","sources"],"additionalProperties":false}`)

var verdictSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"sufficient":{"type":"boolean"},"missing":{"type":"string"},"next_query":{"type":"string"}},` +
	`"required":["sufficient","missing","next_query"],"additionalProperties":false}`)

// tools are the definitions the model sees: search always, the
// expansions when a source can follow passages.
func (r *run) tools() []llm.Tool {
	names := make([]string, len(r.a.Sources))
	filterable := false
	expand := false
	for i, s := range r.a.Sources {
		names[i] = s.Name
		filterable = filterable || s.Filterable
		expand = expand || s.Expander != nil
	}
	src, _ := json.Marshal(names)
	props := `"query":{"type":"string","description":"what to search for"},` +
		`"source":{"type":"string","enum":` + string(src) + `,"description":"the source to search (default: the first)"},` +
		`"mode":{"type":"string","enum":["auto","keyword","vector","hybrid"],"description":"search mode; omit for the source's own"},` +
		`"top_k":{"type":"integer","minimum":1,"maximum":` + strconv.Itoa(MaxTopK) + `}`
	if filterable {
		props += `,"filter":{"type":"object","description":"Quarry filter on metadata fields, e.g. {\"lang\":{\"$eq\":\"en\"}}; it can only narrow"}`
	}
	out := []llm.Tool{{Name: ToolSearch, Description: "Search a source; returns passages as [id] location: text.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` + props + `},"required":["query"],"additionalProperties":false}`)}}
	if expand {
		out = append(out,
			llm.Tool{Name: ToolNeighbours, Description: "Fetch the chunks around a passage in its document.",
				Parameters: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"},"window":{"type":"integer","minimum":1,"maximum":3}},"required":["id"],"additionalProperties":false}`)},
			llm.Tool{Name: ToolLinked, Description: "Fetch passages of the sections the knowledge hierarchy links to a passage's section.",
				Parameters: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"},"limit":{"type":"integer","minimum":1,"maximum":10}},"required":["id"],"additionalProperties":false}`)},
			llm.Tool{Name: ToolDocument, Description: "Fetch the document a passage belongs to: its chunks nearest the passage, in reading order.",
				Parameters: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"},"limit":{"type":"integer","minimum":1,"maximum":20}},"required":["id"],"additionalProperties":false}`)})
	}
	for _, t := range r.a.Tools {
		out = append(out, t.Definition())
	}
	return out
}

// sourceList describes the sources for the system prompt.
func (r *run) sourceList() string {
	var b strings.Builder
	b.WriteString("\n\nSources:\n")
	for _, s := range r.a.Sources {
		b.WriteString("- " + s.Name)
		if s.Description != "" {
			b.WriteString(": " + s.Description)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// generate asks the model, counting its tokens.
func (r *run) generate(ctx context.Context, stage string, req llm.Request) (llm.Response, error) {
	ctx, end := r.a.stage(ctx, stage)
	resp, err := r.a.Model.Generate(ctx, req)
	end(err)
	r.out.Usage.InputTokens += resp.Usage.InputTokens
	r.out.Usage.OutputTokens += resp.Usage.OutputTokens
	return resp, err
}

// withModel is the loop with a model: it triages, then each round lets it
// call tools, and judges what was gathered; when the judge finds it short,
// its next query is fanned out to every source before the model goes on.
func (r *run) withModel(ctx context.Context) error {
	t, err := r.modelTriage(ctx)
	if err != nil {
		return err
	}
	r.out.Triage = t
	r.emit(Step{Kind: StepTriage, Triage: &t})
	if t.Kind == KindNone {
		r.out.Stopped = "no retrieval needed"
		r.out.Verdict = Verdict{Sufficient: true, By: t.By, Reason: "nothing to look up"}
		return nil
	}
	user := "Question: " + r.req.Question
	if len(t.Aspects) > 1 {
		user += "\nParts to find: " + strings.Join(t.Aspects, "; ")
	}
	msgs := append([]llm.Message{llm.System(Instructions + r.sourceList())}, r.req.History...)
	msgs = append(msgs, llm.User(user))
	tools := r.tools()
	for round := 1; round <= r.budget.Rounds; round++ {
		r.out.Rounds = round
		if why := r.spent(ctx, 0); why != "" {
			r.out.Stopped = why
			return nil
		}
		resp, err := r.generate(ctx, "agent.tools", llm.Request{Messages: msgs, Tools: tools, ToolChoice: llm.ToolChoiceAuto})
		if err != nil {
			if ctx.Err() != nil {
				r.out.Stopped = "budget: time"
				return nil
			}
			return fmt.Errorf("agent: round %d: %w", round, err)
		}
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls})
		if len(resp.ToolCalls) > 0 {
			results := r.modelCalls(ctx, resp.ToolCalls)
			for i, c := range resp.ToolCalls {
				msgs = append(msgs, llm.ToolResult(c.ID, results[i]))
			}
			if r.out.Stopped != "" {
				return nil
			}
		}
		v, err := r.judge(ctx)
		if err != nil {
			if ctx.Err() != nil {
				r.out.Stopped = "budget: time"
				return nil
			}
			return err
		}
		r.out.Verdict = v
		r.emit(Step{Kind: StepSufficiency, Verdict: &v})
		if v.Sufficient {
			r.out.Stopped = "sufficient"
			return nil
		}
		if round == r.budget.Rounds {
			break
		}
		// Insufficient: the judge's next query goes to every source at once,
		// then the model goes on from what is missing (IRCoT: the next query
		// comes from the last reasoning step).
		if len(v.Next) > 0 {
			var searches []search
			for si := range r.a.Sources {
				if !r.queried[r.a.Sources[si].Name+"\x00"+v.Next[0]] {
					r.queried[r.a.Sources[si].Name+"\x00"+v.Next[0]] = true
					searches = append(searches, r.searchCall(si, r.aspectOf(v.Next[0]), v.Next[0], r.topK))
				}
			}
			if why := r.spent(ctx, len(searches)); why != "" {
				r.out.Stopped = why
				return nil
			}
			if len(searches) > 0 {
				r.addQuery(v.Next[0])
				res := r.runCalls(ctx, searches, nil)
				var found []*document.Document
				for _, x := range res {
					found = append(found, x.docs...)
				}
				msgs = append(msgs, llm.User("Not enough yet: "+strings.Join(v.Missing, "; ")+
					"\nA search of every source for \""+v.Next[0]+"\" found:\n"+listing(found)+
					"\nSearch further for what is still missing, or reply DONE."))
				continue
			}
		}
		msgs = append(msgs, llm.User("Not enough yet: "+strings.Join(v.Missing, "; ")+". Search for what is missing, or reply DONE."))
	}
	if r.out.Stopped == "" {
		r.out.Stopped = "budget: rounds"
	}
	return nil
}

// modelTriage asks the model to classify the question, falling back to
// the rules when its reply does not parse.
func (r *run) modelTriage(ctx context.Context) (Triage, error) {
	msgs := []llm.Message{llm.System(triagePrompt + r.sourceList())}
	msgs = append(msgs, r.req.History...)
	msgs = append(msgs, llm.User(r.req.Question))
	resp, err := r.generate(ctx, "agent.triage", llm.Request{Messages: msgs, Schema: &llm.Schema{Name: "triage", Schema: triageSchema}, MaxTokens: 400})
	if err != nil {
		if ctx.Err() != nil {
			return Triage{}, fmt.Errorf("agent: triage: %w", err)
		}
		return Triage{}, fmt.Errorf("agent: triage: %w", err)
	}
	var t Triage
	if json.Unmarshal([]byte(stripFence(resp.Text)), &t) != nil || !slices.Contains([]string{KindNone, KindLookup, KindMultiStep}, t.Kind) {
		rt := triageByRules(r.req.Question)
		rt.By = "rules (the model's triage did not parse)"
		return rt, nil
	}
	t.By = "model"
	var aspects []string
	for _, a := range t.Aspects {
		if a = strings.TrimSpace(a); a != "" && !slices.Contains(aspects, a) {
			aspects = append(aspects, a)
		}
	}
	if len(aspects) == 0 && t.Kind != KindNone {
		aspects = []string{r.req.Question}
	}
	if t.Kind == KindNone {
		aspects = []string{}
	}
	t.Aspects = aspects[:min(len(aspects), maxAspects)]
	srcs := []string{}
	for _, s := range t.Sources {
		if _, ok := r.source(s); ok && !slices.Contains(srcs, s) {
			srcs = append(srcs, s)
		}
	}
	t.Sources = srcs
	return t, nil
}

// judge asks the model whether the gathered passages suffice.
func (r *run) judge(ctx context.Context) (Verdict, error) {
	if why := r.spent(ctx, 0); why != "" {
		r.out.Stopped = why
		return Verdict{By: "model", Reason: why}, nil
	}
	pass := r.ranked()
	msgs := []llm.Message{llm.System(judgePrompt), llm.User("Question: " + r.req.Question + "\n\nPassages:\n" + listing(pass))}
	resp, err := r.generate(ctx, "agent.judge", llm.Request{Messages: msgs, Schema: &llm.Schema{Name: "verdict", Schema: verdictSchema}, MaxTokens: 300})
	if err != nil {
		return Verdict{}, fmt.Errorf("agent: sufficiency: %w", err)
	}
	var raw struct {
		Sufficient bool   `json:"sufficient"`
		Missing    string `json:"missing"`
		Next       string `json:"next_query"`
	}
	if json.Unmarshal([]byte(stripFence(resp.Text)), &raw) != nil {
		// A reply that does not parse is no verdict: fall back on coverage.
		v := r.coverage(r.out.Triage.Aspects)
		v.By = "rules (the model's verdict did not parse)"
		return v, nil
	}
	v := Verdict{Sufficient: raw.Sufficient && len(pass) > 0, By: "model", Reason: strings.TrimSpace(raw.Missing)}
	if !v.Sufficient {
		if m := strings.TrimSpace(raw.Missing); m != "" {
			v.Missing = []string{m}
		}
		if n := strings.TrimSpace(raw.Next); n != "" {
			v.Next = []string{n}
		}
	}
	return v, nil
}

// modelCalls validates and runs the model's tool calls (at most what the
// budget leaves; the rest are answered as refused) and returns what to
// tell the model for each.
func (r *run) modelCalls(ctx context.Context, calls []llm.ToolCall) []string {
	out := make([]string, len(calls))
	var searches []search
	var exps []expansion
	var extras []extraCall
	idx := map[string]int{} // call id → position in out
	room := max(r.budget.ToolCalls-r.out.ToolCalls, 0)
	for i, c := range calls {
		idx[c.ID] = i
		args := c.Arguments
		if len(args) == 0 {
			args = json.RawMessage(`{}`)
		}
		if len(searches)+len(exps)+len(extras) >= room {
			out[i] = "refused: the tool-call budget is spent"
			r.out.Stopped = "budget: tool calls"
			r.refused(c, out[i])
			continue
		}
		switch c.Name {
		case ToolSearch:
			s, err := r.parseSearch(c, args)
			if err != nil {
				out[i] = "refused: " + err.Error()
				r.refused(c, out[i])
				continue
			}
			searches = append(searches, s)
		case ToolNeighbours, ToolLinked, ToolDocument:
			e, err := r.parseExpansion(c, args)
			if err != nil {
				out[i] = "refused: " + err.Error()
				r.refused(c, out[i])
				continue
			}
			exps = append(exps, e)
		default:
			if t := r.extraTool(c.Name); t != nil {
				extras = append(extras, extraCall{id: c.ID, name: c.Name, tool: t, args: args})
				continue
			}
			out[i] = "refused: there is no tool " + strconv.Quote(c.Name)
			r.refused(c, out[i])
		}
	}
	for _, s := range searches {
		r.addQuery(s.q.Text)
	}
	for j, text := range r.runExtras(ctx, extras) {
		out[idx[extras[j].id]] = text
	}
	res := r.runCalls(ctx, searches, exps)
	for j, s := range searches {
		out[idx[s.id]] = resultText(res[j])
	}
	for j, e := range exps {
		out[idx[e.id]] = resultText(res[len(searches)+j])
	}
	return out
}

// extraCall is a call of one of the agent's Tools.
type extraCall struct {
	id, name string
	tool     Tool
	args     json.RawMessage
}

// extraTool finds one of the agent's Tools by name.
func (r *run) extraTool(name string) Tool {
	for _, t := range r.a.Tools {
		if t.Definition().Name == name {
			return t
		}
	}
	return nil
}

// runExtras runs calls of the agent's Tools concurrently, each under the
// default source timeout, gathers the passages they bring (as passages no
// expansion can follow) and returns what to tell the model for each.
func (r *run) runExtras(ctx context.Context, calls []extraCall) []string {
	if len(calls) == 0 {
		return nil
	}
	for _, c := range calls {
		r.emit(Step{Kind: StepToolCall, Call: &Call{ID: c.id, Tool: c.name, Arguments: c.args}})
	}
	r.out.ToolCalls += len(calls)
	found := make([]Found, len(calls))
	res := make([]result, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i] = r.timed(ctx, 0, "agent.tool", func(ctx context.Context) ([]*document.Document, error) {
				f, err := c.tool.Call(ctx, c.args)
				found[i] = f
				return f.Passages, err
			})
		}()
	}
	wg.Wait()
	out := make([]string, len(calls))
	for i, c := range calls {
		res[i].docs = r.add(-1, r.aspectOf(string(c.args)), res[i].docs)
		r.report(c.id, c.name, c.name, res[i])
		if res[i].err != nil {
			out[i] = "failed: " + res[i].err.Error()
			continue
		}
		out[i] = found[i].Text
		if len(res[i].docs) > 0 {
			out[i] = strings.TrimSpace(out[i] + "\n" + listing(res[i].docs))
		}
		if out[i] == "" {
			out[i] = "no result"
		}
	}
	return out
}

// refused records a call that was not run.
func (r *run) refused(c llm.ToolCall, why string) {
	r.emit(Step{Kind: StepToolCall, Call: &Call{ID: c.ID, Tool: c.Name, Arguments: c.Arguments}})
	r.emit(Step{Kind: StepToolResult, Result: &CallResult{ID: c.ID, Tool: c.Name, IDs: []string{}, Error: why}})
}

func resultText(res result) string {
	if res.err != nil {
		return "failed: " + res.err.Error()
	}
	if len(res.docs) == 0 {
		return "no passages"
	}
	return listing(res.docs)
}

// parseSearch validates a search call's arguments.
func (r *run) parseSearch(c llm.ToolCall, args json.RawMessage) (search, error) {
	var a struct {
		Query  string          `json:"query"`
		Source string          `json:"source"`
		Mode   string          `json:"mode"`
		Filter json.RawMessage `json:"filter"`
		TopK   int             `json:"top_k"`
	}
	if err := strictJSON(args, &a); err != nil {
		return search{}, err
	}
	if strings.TrimSpace(a.Query) == "" {
		return search{}, errors.New("query is empty")
	}
	si := 0
	if a.Source != "" {
		var ok bool
		if si, ok = r.source(a.Source); !ok {
			return search{}, fmt.Errorf("no source %q", a.Source)
		}
	}
	switch a.Mode {
	case "", "auto", "keyword", "vector", "hybrid":
	default:
		return search{}, fmt.Errorf("mode %q: use auto, keyword, vector or hybrid", a.Mode)
	}
	if a.TopK < 0 || a.TopK > MaxTopK {
		return search{}, fmt.Errorf("top_k %d: give 1 to %d", a.TopK, MaxTopK)
	}
	if a.TopK == 0 {
		a.TopK = r.topK
	}
	q := Query{Text: a.Query, Mode: a.Mode, TopK: a.TopK}
	if len(a.Filter) > 0 && string(a.Filter) != "null" {
		if !r.a.Sources[si].Filterable {
			return search{}, fmt.Errorf("source %q takes no filter", r.a.Sources[si].Name)
		}
		f, err := filter.ParseValue(a.Filter)
		if err != nil {
			return search{}, err
		}
		// What a model writes is never trusted with a store's own syntax,
		// whatever its caller may send.
		if filter.RejectRaw(f, "") != nil {
			return search{}, errors.New("raw filter fragments are not accepted from the model: use portable conditions")
		}
		q.Filter = f
	}
	return search{id: c.ID, source: si, aspect: r.aspectOf(a.Query), q: q, args: args}, nil
}

// expansionBounds are each expansion's size argument: its name, default
// and most.
var expansionBounds = map[string]struct {
	key      string
	def, max int
}{
	ToolNeighbours: {"window", 1, 3},
	ToolLinked:     {"limit", 3, 10},
	ToolDocument:   {"limit", 10, 20},
}

// parseExpansion validates a neighbours, linked or document call: its id must name
// a passage the run has gathered.
func (r *run) parseExpansion(c llm.ToolCall, args json.RawMessage) (expansion, error) {
	var a struct {
		ID     string `json:"id"`
		Window int    `json:"window"`
		Limit  int    `json:"limit"`
	}
	if err := strictJSON(args, &a); err != nil {
		return expansion{}, err
	}
	d, ok := r.pool[a.ID]
	if !ok {
		return expansion{}, fmt.Errorf("no gathered passage has id %q", a.ID)
	}
	if r.from[a.ID] < 0 {
		return expansion{}, fmt.Errorf("passage %q came from a tool, not a source: it cannot be followed", a.ID)
	}
	b := expansionBounds[c.Name]
	n := a.Limit
	if b.key == "window" {
		n = a.Window
		if a.Limit != 0 {
			return expansion{}, fmt.Errorf("%s takes window, not limit", c.Name)
		}
	} else if a.Window != 0 {
		return expansion{}, fmt.Errorf("%s takes limit, not window", c.Name)
	}
	if n == 0 {
		n = b.def
	}
	if n < 1 || n > b.max {
		return expansion{}, fmt.Errorf("%s %d is out of range 1-%d", b.key, n, b.max)
	}
	aspect := 0
	for k, ls := range r.lists {
		for _, l := range ls {
			if slices.Contains(l, d) {
				aspect = k
			}
		}
	}
	return expansion{id: c.ID, tool: c.Name, doc: d, aspect: aspect, n: n, args: args}, nil
}

// aspectOf is the triage aspect a query is most about: the one sharing
// most of its terms, the first on a tie.
func (r *run) aspectOf(q string) int {
	qt := map[string]bool{}
	for _, t := range r.an.Analyze(q) {
		qt[t] = true
	}
	best, bestN := 0, -1
	for i, a := range r.out.Triage.Aspects {
		n := 0
		for _, t := range r.an.Analyze(a) {
			if qt[t] {
				n++
			}
		}
		if n > bestN {
			best, bestN = i, n
		}
	}
	return best
}

// strictJSON decodes a tool's arguments, refusing unknown fields.
func strictJSON(args json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("arguments: %w", err)
	}
	return nil
}

// listing shows passages to the model: [id] location: text, each cut to
// a few hundred characters.
func listing(docs []*document.Document) string {
	if len(docs) == 0 {
		return "(none)\n"
	}
	var b strings.Builder
	for _, d := range docs {
		text := strings.Join(strings.Fields(d.Content), " ")
		if r := []rune(text); len(r) > maxShown {
			text = string(r[:maxShown]) + "…"
		}
		b.WriteString("[" + d.ID + "] " + document.Locate(d.SourceName, d.Provenance) + ": " + text + "\n")
	}
	return b.String()
}

// maxShown is how much of a passage the model sees in a tool result.
const maxShown = 600

// stripFence takes a JSON reply out of a Markdown code fence, as some
// models wrap structured replies.
func stripFence(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "```") {
		s = strings.TrimPrefix(s, "```json")
		s = strings.TrimPrefix(s, "```")
		s = strings.TrimSuffix(strings.TrimSpace(s), "```")
	}
	return strings.TrimSpace(s)
}

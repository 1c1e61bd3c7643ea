package rerank_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/internal/conformance"
	"github.com/quarry-rag/quarry/rerank"
	"github.com/quarry-rag/quarry/rerank/cohere"
	"github.com/quarry-rag/quarry/rerank/openailike"
)

// ownedElsewhere names the mirai_agentic_rag cases other packages run.
var ownedElsewhere = map[string]string{
	"quality gate boundary inclusive":        "eval",
	"judge envelope":                         "eval",
	"answer relevancy (DeepEval definition)": "eval",
	"golden set file":                        "eval",
}

// TestConformance runs SEMANTICS §5's threshold and rerank-response cases
// and the packing cases of the mirai_agentic_rag area.
func TestConformance(t *testing.T) {
	var mine []conformance.Case
	for _, c := range conformance.Load(t, "rag_pipeline", "mirai_agentic_rag") {
		switch {
		case c.Area == "rag_pipeline" && !strings.HasPrefix(c.Name, "FixedThreshold:") &&
			!strings.HasPrefix(c.Name, "AdaptiveThreshold:") && !strings.HasPrefix(c.Name, "reranker"):
			continue
		case ownedElsewhere[c.Name] != "":
			t.Logf("%s: run by %s", c.Name, ownedElsewhere[c.Name])
			continue
		}
		mine = append(mine, c)
	}
	diffs := conformance.LoadDifferences(t, filepath.Join("testdata", "conformance_differences.json"))
	conformance.Run(t, mine, diffs, check)
}

func check(c conformance.Case) []conformance.Result {
	switch {
	case strings.HasPrefix(c.Name, "FixedThreshold:"), strings.HasPrefix(c.Name, "AdaptiveThreshold:"):
		return thresholdCase(c)
	case strings.HasPrefix(c.Name, "reranker"):
		return rerankerCase(c)
	case strings.HasPrefix(c.Name, "estimate_citation_tokens"):
		return overheadCase(c)
	case strings.Contains(c.Name, "budget"), strings.Contains(c.Name, "citation_buffer"):
		return budgetCase(c)
	case c.Name == "RerankerConfig defaults":
		return defaultsCase(c)
	}
	return conformance.Fail("no check for this case")
}

// scoresOf reads a list of scores where null is an unscored document.
func docsOf(scores []*float64) []*document.Document {
	docs := make([]*document.Document, len(scores))
	for i, s := range scores {
		docs[i] = document.New(fmt.Sprint(i))
		if s != nil {
			docs[i].SetScore(*s)
		}
	}
	return docs
}

func thresholdCase(c conformance.Case) []conformance.Result {
	var in struct {
		Threshold   json.RawMessage
		Multiplier  float64
		Scores      []*float64
		ScoresKeyed map[string]float64 `json:"scores_keyed"`
	}
	var want struct{ Scores []float64 }
	if err := c.Decode(&in, &want); err != nil {
		return conformance.Of(err)
	}
	if in.ScoresKeyed != nil {
		keys := make([]int, 0, len(in.ScoresKeyed))
		for k := range in.ScoresKeyed {
			n, _ := strconv.Atoi(k)
			keys = append(keys, n)
		}
		slices.Sort(keys)
		for _, k := range keys {
			s := in.ScoresKeyed[strconv.Itoa(k)]
			in.Scores = append(in.Scores, &s)
		}
	}
	var p interface {
		Process(context.Context, string, []*document.Document) ([]*document.Document, error)
	}
	if strings.HasPrefix(c.Name, "FixedThreshold") {
		th := rerank.FixedThreshold{Min: rerank.DefaultThreshold}
		if string(in.Threshold) != `"default"` {
			if err := json.Unmarshal(in.Threshold, &th.Min); err != nil {
				return conformance.Of(err)
			}
		}
		p = th
	} else {
		p = rerank.AdaptiveThreshold{Multiplier: in.Multiplier}
	}
	out, err := p.Process(context.Background(), "q", docsOf(in.Scores))
	if err != nil {
		return conformance.Of(err)
	}
	got := []float64{}
	for _, d := range out {
		got = append(got, d.Score)
	}
	if want.Scores == nil {
		want.Scores = []float64{}
	}
	if !slices.Equal(got, want.Scores) {
		return conformance.Fail("scores %v, want %v", got, want.Scores)
	}
	return conformance.Pass()
}

// rerankerCase drives a real provider (Cohere's wire format) against a
// fake that answers with the case's response.
func rerankerCase(c conformance.Case) []conformance.Result {
	var in struct {
		Documents      []string
		DocumentsKeyed map[string]string `json:"documents_keyed"`
		Response       json.RawMessage
	}
	var want struct {
		Requests    *int
		Contents    []string
		SecondScore *float64 `json:"Second.score"`
		IsList      bool     `json:"sent_documents_is_list"`
		Error       *conformance.ExpectedError
	}
	if err := c.Decode(&in, &want); err != nil {
		return conformance.Of(err)
	}
	if in.DocumentsKeyed != nil {
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range in.DocumentsKeyed {
				if !yield(k) {
					return
				}
			}
		})
		for _, k := range keys {
			in.Documents = append(in.Documents, in.DocumentsKeyed[k])
		}
	}
	var calls atomic.Int32
	var sentList atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var body struct{ Documents json.RawMessage }
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &body)
		sentList.Store(strings.HasPrefix(string(body.Documents), "["))
		w.Write(in.Response)
	}))
	defer srv.Close()
	rr, err := cohere.New(cohere.Config{Endpoint: srv.URL, APIKey: "k"})
	if err != nil {
		return conformance.Of(err)
	}
	docs := make([]*document.Document, len(in.Documents))
	for i, s := range in.Documents {
		docs[i] = document.New(s)
	}
	out, err := rr.Rerank(context.Background(), "q", docs)
	if want.Error != nil {
		if err == nil {
			return conformance.Fail("no error, want %q", want.Error.Message)
		}
		// The message names the index at fault, as the case's does.
		for _, f := range strings.Fields(want.Error.Message) {
			if _, e := strconv.Atoi(strings.Trim(f, ".,")); e == nil && !strings.Contains(err.Error(), "document "+strings.Trim(f, ".,")) {
				return conformance.Fail("error %q does not name document %s", err, f)
			}
		}
		return conformance.Pass()
	}
	if err != nil {
		return conformance.Of(err)
	}
	if want.Requests != nil && int(calls.Load()) != *want.Requests {
		return conformance.Fail("%d requests, want %d", calls.Load(), *want.Requests)
	}
	got := []string{}
	for _, d := range out {
		got = append(got, d.Content)
	}
	if want.Contents != nil && !slices.Equal(got, want.Contents) {
		return conformance.Fail("contents %v, want %v", got, want.Contents)
	}
	if want.IsList && !sentList.Load() {
		return conformance.Fail("documents were not sent as a list")
	}
	if want.SecondScore != nil && (len(out) == 0 || out[0].Score != *want.SecondScore) {
		return conformance.Fail("Second scored %v", out)
	}
	return conformance.Pass()
}

func overheadCase(c conformance.Case) []conformance.Result {
	var in struct {
		Chunks []struct {
			Source, ID string
			Metadata   struct{ Extra map[string]any }
		}
	}
	var want struct{ Tokens int }
	if err := c.Decode(&in, &want); err != nil {
		return conformance.Of(err)
	}
	var docs []*document.Document
	for _, ch := range in.Chunks {
		if len(ch.Metadata.Extra) > 0 {
			return conformance.Fail("citation metadata beyond provenance is not modelled")
		}
		docs = append(docs, &document.Document{ID: ch.ID, SourceName: ch.Source})
	}
	if got := rerank.CitationOverhead(docs); got != want.Tokens {
		return conformance.Fail("overhead %d, want %d", got, want.Tokens)
	}
	return conformance.Pass()
}

func budgetCase(c conformance.Case) []conformance.Result {
	var in struct {
		Budget   int  `json:"token_budget"`
		Overhead int  `json:"estimated_citation_tokens"`
		Buffer   *int `json:"citation_buffer"`
	}
	var want struct {
		ChunkBudget int `json:"chunk_budget"`
		Result      []string
	}
	if err := c.Decode(&in, &want); err != nil {
		return conformance.Of(err)
	}
	buffer := rerank.DefaultBuffer
	if in.Buffer != nil {
		buffer = *in.Buffer
	}
	if got := rerank.ChunkBudget(in.Budget, in.Overhead, buffer); got != want.ChunkBudget {
		return conformance.Fail("chunk budget %d, want %d", got, want.ChunkBudget)
	}
	// Packing with that budget: a one-token passage whose citation costs
	// the case's overhead (4 bytes per token of name).
	d := &document.Document{ID: "", SourceName: strings.Repeat("x", in.Overhead*4-2), Content: "a"}
	p := &rerank.Pack{Budget: in.Budget, Buffer: buffer}
	if buffer == 0 {
		p.Buffer = -1
	}
	out, err := p.Process(context.Background(), "q", []*document.Document{d})
	if err != nil {
		return conformance.Of(err)
	}
	if wantN := min(1, max(want.ChunkBudget, 0)); len(out) != wantN {
		return conformance.Fail("packed %d passages, want %d", len(out), wantN)
	}
	return conformance.Pass()
}

func defaultsCase(c conformance.Case) []conformance.Result {
	var want struct {
		MaxContextTokens int    `json:"max_context_tokens"`
		CohereModel      string `json:"cohere_model"`
		CohereEndpoint   string `json:"cohere_endpoint"`
		QwenModel        string `json:"qwen_model"`
	}
	if err := c.Decode(nil, &want); err != nil {
		return conformance.Of(err)
	}
	if rerank.DefaultBudget != want.MaxContextTokens || cohere.DefaultModel != want.CohereModel ||
		cohere.DefaultEndpoint != want.CohereEndpoint || openailike.DefaultModel != want.QwenModel {
		return conformance.Fail("defaults differ from %+v", want)
	}
	return conformance.Pass()
}

package server_test

import (
	"slices"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/server"
)

// TestSpans checks a search and an answer leave a request span with a
// span per pipeline stage under it.
func TestSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { tp.Shutdown(t.Context()) })
	f := newFixture(t, func(c *config) { c.Tracer = tp })
	f.do(t, "POST", "/v1/collections/kb/documents", "", map[string]any{"documents": []map[string]any{{"text": "Refunds are paid within fourteen days."}}})
	for _, tc := range []struct {
		path   string
		body   map[string]any
		stages []string
	}{
		{"/v1/collections/kb/search", map[string]any{"query": "refunds", "mode": "hybrid"}, []string{"embed", "search"}},
		{"/v1/collections/kb/ask", map[string]any{"question": "How fast are refunds paid?", "mode": "hybrid"}, []string{"retrieve", "embed"}},
	} {
		before := len(rec.Ended())
		expect(t, tc.path, f.do(t, "POST", tc.path, "", tc.body), 200, "")
		spans := rec.Ended()[before:]
		var root sdktrace.ReadOnlySpan
		names := map[string]sdktrace.ReadOnlySpan{}
		for _, s := range spans {
			names[s.Name()] = s
			if s.Name() == "HTTP POST" {
				root = s
			}
		}
		if root == nil {
			t.Fatalf("%s: no request span among %v", tc.path, spanNames(names))
		}
		for _, st := range tc.stages {
			s, ok := names[st]
			if !ok {
				t.Errorf("%s: no %q span among %v", tc.path, st, spanNames(names))
				continue
			}
			if s.SpanContext().TraceID() != root.SpanContext().TraceID() {
				t.Errorf("%s: span %q is not in the request's trace", tc.path, st)
			}
		}
		var route string
		for _, a := range root.Attributes() {
			if a.Key == "http.route" {
				route = a.Value.AsString()
			}
		}
		if route != "POST /v1/collections/{collection}"+tc.path[len("/v1/collections/kb"):] {
			t.Errorf("%s: http.route %q", tc.path, route)
		}
	}
}

func spanNames(m map[string]sdktrace.ReadOnlySpan) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestServerPostNeighbours checks the server's own post-processors see the
// real retriever: neighbours needs its neighbour lookup, which a wrapper
// for tracing used to hide, so `quarry serve --post neighbours` refused to
// start.
func TestServerPostNeighbours(t *testing.T) {
	f := newFixture(t, func(c *config) { c.kb = append(c.kb, quarry.WithPost("neighbours")) })
	f.do(t, "POST", "/v1/collections/kb/documents", "", map[string]any{"documents": []map[string]any{{"text": "Refunds take fourteen days.", "source": "refunds.md"}}})
	r := f.do(t, "POST", "/v1/collections/kb/ask", "", map[string]any{"question": "How long do refunds take?", "post": []string{"neighbours=2", "pack=2000"}})
	expect(t, "ask", r, 200, "")
	if cites, _ := r.body["citations"].([]any); len(cites) == 0 {
		t.Fatalf("no citations: %s", r.raw)
	}
	r = f.do(t, "POST", "/v1/collections/kb/ask", "", map[string]any{"question": "refunds?", "post": []string{"rerank=tei@http://127.0.0.1:1"}})
	expect(t, "a request's reranker address", r, 400, server.CodeInvalidRequest)
}

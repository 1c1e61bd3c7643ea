package server_test

import (
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/quarry-rag/quarry/keys"
	"github.com/quarry-rag/quarry/rag"
	"github.com/quarry-rag/quarry/server"
)

// TestSpans checks a search and an answer leave a request span with a
// span per pipeline stage under it.
func TestSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { tp.Shutdown(t.Context()) })
	f := newFixture(t, func(c *server.Config) { c.Tracer = tp })
	f.do(t, "POST", "/v1/collections/kb/documents", "", map[string]any{"documents": []map[string]any{{"text": "Refunds are paid within fourteen days."}}})
	for _, tc := range []struct {
		path   string
		body   map[string]any
		stages []string
	}{
		{"/v1/collections/kb/search", map[string]any{"query": "refunds", "mode": "hybrid"}, []string{"embed", "search"}},
		{"/v1/collections/kb/ask", map[string]any{"question": "How fast are refunds paid?"}, []string{"retrieve", "embed"}},
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

// TestPipelineHook checks each answer's pipeline passes through
// Config.Pipeline, with the caller's scope already set.
func TestPipelineHook(t *testing.T) {
	var calls atomic.Int32
	f := newFixture(t, func(c *server.Config) {
		c.Pipeline = func(p *rag.Pipeline) error {
			calls.Add(1)
			if p.Retriever == nil || p.Scope == nil {
				return errors.New("the pipeline has no retriever or scope")
			}
			return nil
		}
	})
	admin := mustKey(t, f.keys, keys.Spec{Permission: keys.PermAdmin})
	acme := mustKey(t, f.keys, keys.Spec{Permission: keys.PermRead, Filter: "tenant = 'acme'"})
	f.do(t, "POST", "/v1/collections", admin, map[string]any{"name": "kb", "schema": tenantSchema})
	f.do(t, "POST", "/v1/collections/kb/documents", admin, map[string]any{"documents": []map[string]any{{"text": "Refunds take fourteen days.", "metadata": map[string]any{"tenant": "acme"}}}})
	expect(t, "ask", f.do(t, "POST", "/v1/collections/kb/ask", acme, map[string]any{"question": "How long do refunds take?"}), 200, "")
	expect(t, "ask unscoped", f.do(t, "POST", "/v1/collections/kb/ask", admin, map[string]any{"question": "How long do refunds take?"}), 500, server.CodeInternal)
	if calls.Load() != 2 {
		t.Fatalf("hook called %d times", calls.Load())
	}
}

package quarry_test

import (
	"context"
	"slices"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/quarrytest"
)

// TestSpanHooks checks every stage of a search and an answer becomes a
// span, as the HTTP server's do: the hooks are the core's, not a surface's.
func TestSpanHooks(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	model := &quarrytest.ChatModel{Replies: []string{"Five days [1]."}}
	kb := quarrytest.NewKB(t, quarry.WithHooks(quarry.SpanHooks(tp.Tracer("test"))), quarry.WithChatModel(model))
	ctx := context.Background()
	docs := kb.Collection("")
	if _, err := docs.Add(ctx, quarry.NewDocument{Text: "Refunds take five days.", Source: "refunds.md"}); err != nil {
		t.Fatal(err)
	}
	if _, err := docs.Search(ctx, "refunds", quarry.Mode("hybrid")); err != nil {
		t.Fatal(err)
	}
	if _, err := docs.Ask(ctx, "How long do refunds take?"); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range rec.Ended() {
		names = append(names, s.Name())
	}
	for _, want := range []string{"embed", "search", "retrieve", "generate"} {
		if !slices.Contains(names, want) {
			t.Errorf("no %q span among %v", want, names)
		}
	}
}

// TestAgentSpans: each step of an agent's run is a span under the same
// hooks.
func TestAgentSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	kb := quarrytest.NewKB(t, quarry.WithHooks(quarry.SpanHooks(tp.Tracer("test"))))
	ctx := context.Background()
	if _, err := kb.AddDocuments(ctx, quarry.Developer(), "", []quarry.NewDocument{{Text: "Refunds take five days."}, {Text: "Shipping takes two days."}}); err != nil {
		t.Fatal(err)
	}
	if _, err := kb.Ask(ctx, quarry.Developer(), quarry.AskRequest{Question: "How long do refunds take and how long does shipping take?", Agent: true}); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range rec.Ended() {
		if s.Name() == "agent.tool" {
			n++
		}
	}
	if n < 2 {
		t.Errorf("%d agent.tool spans, want one per search", n)
	}
}

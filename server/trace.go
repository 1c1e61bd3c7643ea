package server

import (
	"context"
	"fmt"
	"os"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/embed"
)

// OTLPConfigured reports whether the environment names an OTLP endpoint
// for traces (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT).
func OTLPConfigured() bool {
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// NewOTLPTracer builds a tracer provider that sends spans over OTLP/HTTP
// to the endpoint the standard OTEL_EXPORTER_OTLP_* variables name. Call
// shutdown to flush.
func NewOTLPTracer(ctx context.Context, version string) (tp trace.TracerProvider, shutdown func(context.Context) error, err error) {
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("otlp traces: %w", err)
	}
	res := resource.NewSchemaless(attribute.String("service.name", "quarry"), attribute.String("service.version", version))
	p := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return p, p.Shutdown, nil
}

// stage runs fn in a span named for a pipeline stage and times it.
func stage[T any](ctx context.Context, s *Server, name string, fn func(context.Context) (T, error)) (T, error) {
	ctx, span := s.tracer.Start(ctx, name)
	defer span.End()
	start := time.Now()
	v, err := fn(ctx)
	s.metrics.observeStage(name, time.Since(start))
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	return v, err
}

// tracedEmbedder puts each embedding call in an "embed" span; it keeps the
// provider's query input type.
type tracedEmbedder struct {
	embed.Embedder
	s *Server
}

func (e *tracedEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return stage(ctx, e.s, "embed", func(ctx context.Context) ([][]float32, error) { return e.Embedder.Embed(ctx, texts) })
}

func (e *tracedEmbedder) EmbedQuery(ctx context.Context, queries []string) ([][]float32, error) {
	return stage(ctx, e.s, "embed", func(ctx context.Context) ([][]float32, error) {
		return embed.EmbedQuery(ctx, e.Embedder, queries)
	})
}

// hooks report the core's stages (embed, search, retrieve, generate) as
// spans (quarry.SpanHooks) and timings; observing through hooks keeps the
// retriever's and the model's optional capabilities in view, which
// wrappers would hide.
func (s *Server) hooks() quarry.Hooks {
	spans := quarry.SpanHooks(s.tracer)
	return quarry.Hooks{Stage: func(ctx context.Context, name string) (context.Context, func(error)) {
		ctx, end := spans.Stage(ctx, name)
		start := time.Now()
		return ctx, func(err error) {
			s.metrics.observeStage(name, time.Since(start))
			end(err)
		}
	}}
}

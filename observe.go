package quarry

import (
	"context"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// SpanHooks report each stage as an OpenTelemetry span of tracer, under
// the span the context carries: the same spans from every surface (the
// HTTP server adds its metrics to them; `quarry mcp`, `ask` and `search`
// use them as they are when OTEL_EXPORTER_OTLP_ENDPOINT is set).
func SpanHooks(tracer trace.Tracer) Hooks {
	return Hooks{Stage: func(ctx context.Context, name string) (context.Context, func(error)) {
		ctx, span := tracer.Start(ctx, name)
		return ctx, func(err error) {
			if err != nil {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
			}
			span.End()
		}
	}}
}

package cli

import (
	"context"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/internal/buildinfo"
	"github.com/quarry-rag/quarry/server"
)

// tracing sends spans over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT (or its
// traces variant) is set: the tracer provider, the knowledge base option
// that reports the core's stages to it, and the function that flushes the
// spans. Without the variable there is nothing to send.
func tracing(ctx context.Context, logger *slog.Logger, name string) (trace.TracerProvider, []quarry.Option, func(), error) {
	if !server.OTLPConfigured() {
		return nil, nil, func() {}, nil
	}
	tp, shutdown, err := server.NewOTLPTracer(ctx, buildinfo.Version())
	if err != nil {
		return nil, nil, nil, err
	}
	if logger != nil {
		logger.Info(name + ": sending spans over OTLP")
	}
	flush := func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = shutdown(sctx)
	}
	hooks := quarry.SpanHooks(tp.Tracer("github.com/quarry-rag/quarry/" + name))
	return tp, []quarry.Option{quarry.WithHooks(hooks)}, flush, nil
}

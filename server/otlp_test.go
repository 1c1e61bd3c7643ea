package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/quarry-rag/quarry/server"
)

// TestOTLP checks spans reach an OTLP/HTTP collector named by the
// standard variable, and that nothing is configured without it.
func TestOTLP(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	if server.OTLPConfigured() {
		t.Fatal("OTLP configured without a variable")
	}
	var got atomic.Int32
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/traces" && r.Header.Get("Content-Type") == "application/x-protobuf" {
			got.Add(1)
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	if !server.OTLPConfigured() {
		t.Fatal("OTLP not configured with OTEL_EXPORTER_OTLP_ENDPOINT set")
	}
	ctx := context.Background()
	tp, shutdown, err := server.NewOTLPTracer(ctx, "test")
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(c *config) { c.Tracer = tp })
	f.do(t, "POST", "/v1/collections/kb/documents", "", map[string]any{"documents": []map[string]any{{"text": "hello"}}})
	if err := shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if got.Load() == 0 {
		t.Fatal("the collector received no spans")
	}
}

package cli

import (
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/server"
)

func newServeCmd(stdio IO) *cobra.Command {
	var (
		f         kbFlags
		addr      string
		roots     []string
		model     string
		origins   []string
		allowRaw  bool
		maxUpload int64
		timeout   time.Duration
		rate      float64
		verbose   bool
		quality   qualityFlags
		listen    listenFlags
		ocr       bool
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the knowledge base over HTTP: the API, its OpenAPI document and the web UI",
		Long: `Serve the knowledge base over HTTP: a JSON API (OpenAPI 3.1 at /openapi.json) for
collections, documents, uploads, search and cited answers (also as server-sent events),
the web UI at /, Prometheus metrics at /metrics and probes at /healthz and /readyz.

Requests need an API key once one exists (quarry keys create). Without keys the server
listens on loopback only and says so. Spans go to an OTLP collector when
OTEL_EXPORTER_OTLP_ENDPOINT is set. See docs/server.md.`,
		Example: `  quarry serve
  quarry keys create --permission read --filter "tenant = 'acme'" && quarry serve --addr :8080
  quarry serve --root ./docs --model openai:gpt-4o-mini`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			level := slog.LevelInfo
			if verbose {
				level = slog.LevelDebug
			}
			logger := slog.New(slog.NewTextHandler(stdio.Err, &slog.HandlerOptions{Level: level}))
			k, err := openKB(ctx, &f, true, append(append(quality.options(), ocrOption(ocr)...), quarry.WithChatModelSpec(model), quarry.WithLogger(logger))...)
			if err != nil {
				return err
			}
			defer k.Close()
			kf, err := k.Keys()
			if err != nil {
				return err
			}
			cfg := server.Config{
				KB: k, Roots: roots, Keys: kf, RateLimit: rate,
				MaxUploadBytes: maxUpload, RequestTimeout: timeout, CORSOrigins: origins, Logger: logger,
				AllowRawFilters: allowRaw,
			}
			tp, _, flush, err := tracing(ctx, logger, "serve")
			if err != nil {
				return err
			}
			defer flush()
			cfg.Tracer = tp
			srv, err := server.New(cfg)
			if err != nil {
				return cliErr(err)
			}
			defer srv.Close()
			return server.ListenAndServe(ctx, srv.Handler(), listen.options(addr, srv.Keyed(), "serve", logger))
		},
	}
	f.register(cmd)
	quality.register(cmd)
	listen.register(cmd)
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "address to listen on (host:port); without keys, loopback only")
	cmd.Flags().BoolVar(&ocr, "ocr", false, ocrUsage)
	cmd.Flags().StringArrayVar(&roots, "root", nil, "folder the ingest endpoint may read (repeatable; default: none, uploads only)")
	cmd.Flags().StringVar(&model, "model", "", "chat model for answers as provider:model, overriding the llm setting (default: extractive answers)")
	cmd.Flags().BoolVar(&allowRaw, "allow-raw-filters", false, "accept raw store-tagged filter fragments from every caller (default: refused; a key can be granted them alone)")
	cmd.Flags().StringArrayVar(&origins, "cors-origin", nil, "origin whose pages may call the API from a browser (repeatable; default: none)")
	cmd.Flags().Int64Var(&maxUpload, "max-upload", server.DefaultMaxUploadBytes, "largest upload in bytes")
	cmd.Flags().DurationVar(&timeout, "timeout", server.DefaultRequestTimeout, "longest request, event streams excepted")
	cmd.Flags().Float64Var(&rate, "rate-limit", server.DefaultRateLimit, "requests per second per key, for keys that set none (negative: unlimited)")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "log every request (route, status, duration, key id)")
	return cmd
}

// listenFlags are the limits of an HTTP listener, shared by quarry serve
// and quarry mcp --http. Their defaults are package server's: 0 takes it.
type listenFlags struct {
	maxConns, maxConnsPerPeer  int
	headerTimeout, bodyTimeout time.Duration
}

func (l *listenFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.IntVar(&l.maxConns, "max-conns", server.DefaultMaxConns, "most connections open at once; at the cap the oldest idle one is closed to make room")
	fl.IntVar(&l.maxConnsPerPeer, "max-conns-per-peer", server.DefaultMaxConnsPerPeer, "most connections open at once from one IP address (IPv6: one /64); negative: no cap, e.g. behind a reverse proxy")
	fl.DurationVar(&l.headerTimeout, "header-timeout", server.DefaultHeaderTimeout, "longest wait for a request's header (a connection's first: from its start)")
	fl.DurationVar(&l.bodyTimeout, "body-timeout", server.DefaultBodyTimeout, "longest read of a request's body")
}

// options are the ServeOptions of a listener on addr with these limits.
func (l *listenFlags) options(addr string, keyed bool, name string, logger *slog.Logger) server.ServeOptions {
	return server.ServeOptions{
		Addr: addr, Keyed: keyed, Name: name, Logger: logger,
		MaxConns: l.maxConns, MaxConnsPerPeer: l.maxConnsPerPeer, HeaderTimeout: l.headerTimeout, BodyTimeout: l.bodyTimeout,
	}
}

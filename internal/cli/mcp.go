package cli

import (
	"fmt"
	"io"
	"log/slog"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/mcp"
	"github.com/quarry-rag/quarry/server"
)

func newMCPCmd(stdio IO) *cobra.Command {
	var (
		f        kbFlags
		httpAddr string
		readOnly bool
		roots    []string
		model    string
		scope    string
		allowRaw bool
		ocr      bool
		listen   listenFlags
	)
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the knowledge base to AI assistants over the Model Context Protocol",
		Long: `Serve the knowledge base as MCP tools: knowledge_search, knowledge_ask, knowledge_status,
knowledge_ingest_status and, unless --read-only, knowledge_ingest, knowledge_add_documents
and knowledge_delete.

Without --http the server speaks MCP on stdin and stdout, as assistants that start it
expect; logs go to stderr. Ingestion reads only paths inside the --root folders.

With --http it serves streamable HTTP under the same rules as quarry serve: with API keys
(quarry keys create) every request needs one as a bearer token and is held to the key's
scope; without keys it listens on loopback only. Its connection limits are quarry serve's
(--max-conns, --max-conns-per-peer, --header-timeout, --body-timeout).`,
		Example: `  quarry mcp
  quarry mcp --read-only
  quarry mcp --http 127.0.0.1:8765 --root ./docs`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			logger := slog.New(slog.NewTextHandler(stdio.Err, &slog.HandlerOptions{Level: slog.LevelInfo}))
			_, spans, flush, err := tracing(ctx, logger, "mcp")
			if err != nil {
				return err
			}
			defer flush()
			k, err := openKB(ctx, &f, !readOnly, append(append(spans, ocrOption(ocr)...), quarry.WithChatModelSpec(model), quarry.WithLogger(logger))...)
			if err != nil {
				return err
			}
			defer k.Close()
			sc := mcp.Scope{AllowRawFilters: allowRaw}
			if scope != "" {
				if sc.Filter, err = filter.Parse(scope); err != nil {
					return usageErr(fmt.Errorf("--scope: %w", err))
				}
			}
			srv, err := mcp.New(mcp.Config{KB: k, Roots: roots, ReadOnly: readOnly, Scope: sc, Logger: logger})
			if err != nil {
				return cliErr(err)
			}
			defer srv.Close()
			if httpAddr == "" {
				t := &sdk.IOTransport{Reader: io.NopCloser(stdio.In), Writer: nopWriteCloser{stdio.Out}}
				return srv.Run(ctx, t)
			}
			kf, err := k.Keys()
			if err != nil {
				return err
			}
			return server.ListenAndServe(ctx, srv.HTTPHandler(kf), listen.options(httpAddr, kf.Active(), "mcp", logger))
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&httpAddr, "http", "", "serve streamable HTTP on this address (host:port) instead of stdio")
	cmd.Flags().BoolVar(&readOnly, "read-only", false, "leave out the tools that ingest, add or delete")
	cmd.Flags().StringVar(&model, "model", "", "chat model for knowledge_ask as provider:model, overriding the llm setting (default: extractive answers)")
	cmd.Flags().StringVar(&scope, "scope", "", "a filter every call is held to, in any syntax (closes ingestion; see docs/mcp.md)")
	cmd.Flags().BoolVar(&allowRaw, "allow-raw-filters", false, "accept raw store-tagged filter fragments from the client (default: refused)")
	cmd.Flags().BoolVar(&ocr, "ocr", false, ocrUsage)
	cmd.Flags().StringArrayVar(&roots, "root", nil, "folder knowledge_ingest may read (repeatable; default: the current directory)")
	listen.register(cmd) // with --http
	return cmd
}

// nopWriteCloser keeps the transport from closing the process's stdout.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

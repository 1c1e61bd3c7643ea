// Embedserver mounts Quarry's HTTP API and web UI inside a program's own
// server, under /kb/, next to its own routes. Quarry keeps its own rules
// there: API keys from the knowledge base's keys.json when it has any,
// scopes, limits and the OpenAPI document at /kb/openapi.json.
package main

import (
	"context"
	"log"
	"net/http"
	"path/filepath"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/keys"
	"github.com/quarry-rag/quarry/server"
)

// handler is the program's routes with Quarry's under /kb/.
func handler(kb *quarry.KB, kf *keys.File) (http.Handler, func() error, error) {
	srv, err := server.New(server.Config{KB: kb, Keys: kf})
	if err != nil {
		return nil, nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("hello from the host program\n")) })
	mux.Handle("/kb/", http.StripPrefix("/kb", srv.Handler()))
	return mux, srv.Close, nil
}

func main() {
	ctx := context.Background()
	kb, err := quarry.Open(ctx, "", quarry.Create())
	if err != nil {
		log.Fatal(err)
	}
	defer kb.Close()
	kf, err := keys.Open(filepath.Join(kb.Dir(), "keys.json"))
	if err != nil {
		log.Fatal(err)
	}
	h, closeSrv, err := handler(kb, kf)
	if err != nil {
		log.Fatal(err)
	}
	defer closeSrv()
	// server.ListenAndServe keeps Quarry's listener rules: loopback only
	// without keys, header and body timeouts, a connection cap.
	if err := server.ListenAndServe(ctx, h, server.ServeOptions{Addr: "127.0.0.1:8080", Keyed: kf.Active(), Name: "embedserver"}); err != nil {
		log.Fatal(err)
	}
}

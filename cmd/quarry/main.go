// Command quarry is the Quarry command line: ingest documents, search them
// and ask questions with cited answers. See `quarry --help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/quarry-rag/quarry/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first interrupt asks the command to stop and it winds down (an
	// ingestion finishes the page it is reading); a second one ends the
	// process at once.
	context.AfterFunc(ctx, stop)
	code := cli.Run(ctx, os.Args[1:], cli.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	stop()
	os.Exit(code)
}

package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry"
)

// demoQueries are asked of Quarry's own documentation.
var demoQueries = []string{
	"what happens if ingestion is killed halfway",
	"why is != only allowed on required fields",
	"run Quarry on PostgreSQL with pgvector",
}

func newDemoCmd(stdio IO) *cobra.Command {
	var f kbFlags
	cmd := &cobra.Command{
		Use:   "demo [PATH]",
		Short: "Ingest Quarry's docs (or PATH) into a scratch knowledge base and search it",
		Long: `Ingest a folder — by default docs/ of the Quarry repository — into a knowledge base
(a temporary one unless --kb is given), search it, then ingest again to show that
unchanged files cost nothing. Everything runs offline.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := "docs"
			if len(args) == 1 {
				path = args[0]
			}
			if st, err := os.Stat(path); err != nil || !st.IsDir() {
				return usageErr(errors.New("demo: run it from the Quarry repository (it reads docs/) or name a folder: quarry demo PATH"))
			}
			cleanup, err := f.scratch("quarry-demo-")
			if err != nil {
				return err
			}
			defer cleanup()
			ctx := cmd.Context()
			k, err := openKB(ctx, &f, true)
			if err != nil {
				return err
			}
			defer k.Close()
			fmt.Fprintf(stdio.Out, "Ingesting %s into %s\n", path, k.Dir())
			if _, err := runIngest(ctx, stdio, k, quarry.IngestRequest{Paths: []string{path}}, false); err != nil {
				return err
			}
			for _, q := range demoQueries {
				fmt.Fprintf(stdio.Out, "\n$ quarry search %q -k 2\n", q)
				res, err := k.Search(ctx, quarry.Developer(), quarry.SearchRequest{Query: q, TopK: 2, Hierarchy: true})
				if err != nil {
					return err
				}
				printHits(stdio.Out, res.Results, q, isTerminal(stdio.Out))
			}
			fmt.Fprintf(stdio.Out, "\nIngesting again: unchanged files are skipped.\n")
			_, err = runIngest(ctx, stdio, k, quarry.IngestRequest{Paths: []string{path}}, false)
			return err
		},
	}
	f.register(cmd)
	return cmd
}

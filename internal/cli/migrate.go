package cli

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry/store"
)

func newMigrateCmd(stdio IO) *cobra.Command {
	var (
		f      kbFlags
		to     string
		all    bool
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "migrate --to URL",
		Short: "Copy collections to another store (embedded → PostgreSQL, and back)",
		Long: `Copy the knowledge base's collections — configuration, documents, vectors and the
hashes that let ingestion skip unchanged files — into another store, then check the
counts. Running it again is safe. Afterwards point the knowledge base at the new store
with store = "URL" in config.toml.`,
		Example: `  quarry migrate --to postgres://quarry@db.internal/quarry
  quarry migrate --to embedded:/srv/kb --collection handbook`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if to == "" {
				return usageErr(errors.New("migrate: --to URL is required"))
			}
			ctx := cmd.Context()
			k, err := openKB(ctx, &f, false)
			if err != nil {
				return err
			}
			defer k.Close()
			dst, err := store.Open(ctx, to)
			if err != nil {
				return usageErr(err)
			}
			defer dst.Close()
			names := []string{k.cfg.Collection}
			if all {
				cfgs, err := k.store.Collections(ctx)
				if err != nil {
					return err
				}
				names = names[:0]
				for _, c := range cfgs {
					names = append(names, c.Name)
				}
			}
			var reps []store.CopyReport
			for _, name := range names {
				c, err := k.store.Collection(ctx, name)
				if err != nil {
					return err
				}
				rep, err := store.CopyCollection(ctx, c, dst)
				if err != nil {
					return err
				}
				reps = append(reps, rep)
				if !asJSON {
					fmt.Fprintf(stdio.Out, "%s: %d documents, %d sources copied\n", rep.Collection, rep.Documents, rep.Sources)
				}
			}
			if asJSON {
				return json.NewEncoder(stdio.Out).Encode(reps)
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&to, "to", "", "target store URL (postgres://…, embedded:DIR)")
	cmd.Flags().BoolVar(&all, "all", false, "copy every collection, not only the configured one")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

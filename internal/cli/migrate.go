package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/store"
)

func newMigrateCmd(stdio IO) *cobra.Command {
	var (
		f              kbFlags
		from           string
		to             string
		all            bool
		asJSON         bool
		upgrade        bool
		leaveHierarchy bool
	)
	cmd := &cobra.Command{
		Use:   "migrate [--from DIR|URL] --to URL | --upgrade --store URL",
		Short: "Copy collections to another store (embedded → PostgreSQL, and back)",
		Long: `Copy the knowledge base's collections — configuration, documents, vectors and the
hashes that let ingestion skip unchanged files — into another store, then check the
counts. Nothing is embedded again. Running it again is safe, and an interrupted run
resumes: sources the target already holds with the same hash are skipped. Progress goes
to stderr. Afterwards point the knowledge base at the new store with store = "URL" in
config.toml.`,
		Example: `  quarry migrate --from .quarry --to postgres://quarry@db.internal/quarry --all
  quarry migrate --to embedded:/srv/kb --collection handbook`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if upgrade {
				url := f.store
				if url == "" {
					url = from
				}
				if url == "" {
					return usageErr(errors.New("migrate --upgrade: name the store with --store URL"))
				}
				was, now, err := quarry.UpgradeStore(cmd.Context(), url)
				if err != nil {
					return cliErr(err)
				}
				if asJSON {
					return writeJSON(stdio, map[string]any{"from": was, "to": now})
				}
				if was == now {
					_, err = fmt.Fprintf(stdio.Out, "the store already has layout version %d: nothing to do\n", was)
				} else {
					_, err = fmt.Fprintf(stdio.Out, "upgraded the store from layout version %d to %d\n", was, now)
				}
				return err
			}
			if to == "" {
				return usageErr(errors.New("migrate: --to URL is required"))
			}
			if from != "" {
				if strings.Contains(from, ":") {
					f.store = from
				} else {
					f.kb = from
				}
			}
			ctx := cmd.Context()
			k, err := openKB(ctx, &f, false)
			if err != nil {
				return err
			}
			defer k.Close()
			each := func(rep store.CopyReport) {
				if !asJSON {
					fmt.Fprintf(stdio.Out, "%s: %d documents, %d sources copied, %d sources already there; %d nodes, %d links, %d settings\n",
						rep.Collection, rep.Documents, rep.Sources, rep.Skipped, rep.Nodes, rep.Links, rep.Settings)
					if rep.NodesLeft > 0 {
						fmt.Fprintf(stdio.Out, "%s: %d hierarchy nodes left behind, with their attachments and links: the target keeps no knowledge hierarchy\n",
							rep.Collection, rep.NodesLeft)
					}
					if rep.SettingsLeft > 0 {
						fmt.Fprintf(stdio.Out, "%s: %d settings not copied (its calibration): the target keeps no collection settings, so its searches follow the fixed rule\n",
							rep.Collection, rep.SettingsLeft)
					}
				}
			}
			res, err := k.Migrate(ctx, quarry.MigrateRequest{To: to, All: all, LeaveHierarchy: leaveHierarchy, Each: each, Progress: migrateProgress(stdio, asJSON)})
			if err != nil {
				return cliErr(err)
			}
			if asJSON {
				return json.NewEncoder(stdio.Out).Encode(res)
			}
			_, err = fmt.Fprintf(stdio.Out, "%d ingestion jobs and %d conversation threads copied\n", res.Jobs, res.Threads)
			return err
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&from, "from", "", "source: a knowledge base directory or a store URL (default: this knowledge base)")
	cmd.Flags().StringVar(&to, "to", "", "target store URL (postgres://…, embedded:DIR)")
	cmd.Flags().BoolVar(&upgrade, "upgrade", false, "upgrade the --store an older Quarry set up to this Quarry's layout, in place (PostgreSQL; as the tables' owner)")
	cmd.Flags().BoolVar(&all, "all", false, "copy every collection, not only the configured one")
	cmd.Flags().BoolVar(&leaveHierarchy, "leave-hierarchy", false, "copy into a store that keeps no knowledge hierarchy (docs/stores.md says which), leaving the hierarchy's nodes behind")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

// migrateProgress reports a copy on stderr at most once per 5 % (and at the
// end): JSON lines with --json, plain lines otherwise.
func migrateProgress(stdio IO, asJSON bool) func(store.CopyProgress) {
	last := -1
	return func(p store.CopyProgress) {
		step := 0
		if p.Total > 0 {
			step = p.Done * 20 / p.Total
		}
		if step == last && p.Done != p.Total {
			return
		}
		last = step
		if asJSON {
			json.NewEncoder(stdio.Err).Encode(map[string]any{"event": "progress", "collection": p.Collection, "done": p.Done, "total": p.Total}) //nolint:errcheck // progress is best effort
			return
		}
		fmt.Fprintf(stdio.Err, "%s: %d/%d documents\n", p.Collection, p.Done, p.Total)
	}
}

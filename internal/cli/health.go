package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry"
)

func newHealthCmd(stdio IO) *cobra.Command {
	var (
		f      kbFlags
		fix    bool
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Audit the knowledge base and repair what is safe to repair",
		Long: `Audit the knowledge base. Serious (exit status 1): nodes whose parent is missing, empty or
tiny chunks (under 20 characters), duplicate node names, a collection or chunks whose
embedding model is not the configured one. Warnings: nodes without chunks or children,
chunks without a source, nodes without triggers, source files missing on disk, stale index
checkpoints, chunks under no node.

--fix applies the safe repairs — delete tiny chunks, rebuild stale indexes, place unplaced
chunks, rebuild links — then audits again; the rest needs a person and says how.`,
		Example: `  quarry health
  quarry health --fix --json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			k, err := openKB(ctx, &f, false)
			if err != nil {
				return err
			}
			defer k.Close()
			rep, err := k.Health(ctx, quarry.Developer(), "", fix)
			if err != nil {
				return cliErr(err)
			}
			if asJSON {
				err = writeJSON(stdio, rep)
			} else {
				err = rep.WriteText(stdio.Out)
			}
			if err != nil {
				return err
			}
			if !rep.OK {
				return &ExitError{Code: ExitRuntime, Err: fmt.Errorf("%d serious problems in collection %q", rep.Serious, rep.Collection)}
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&fix, "fix", false, "apply the safe repairs, then audit again")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

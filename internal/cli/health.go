package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/hierarchy"
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
				if err := writeJSON(stdio, rep); err != nil {
					return err
				}
			} else {
				writeHealth(stdio.Out, rep.Report, rep.Fixed)
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

func writeHealth(w io.Writer, rep *hierarchy.Report, fixed []string) {
	for _, f := range fixed {
		fmt.Fprintf(w, "fixed: %s\n", f)
	}
	state := "healthy"
	if !rep.OK {
		state = "NOT healthy"
	}
	fmt.Fprintf(w, "collection %q: %s — %d nodes, %d chunks, %d links; %d serious, %d warnings\n",
		rep.Collection, state, rep.Nodes, rep.Chunks, rep.Links, rep.Serious, rep.Warnings)
	for _, f := range rep.Findings {
		fix := ""
		if f.Fixable {
			fix = " (fixable)"
		}
		fmt.Fprintf(w, "%-7s %s: %d%s — %s\n", f.Severity, strings.ReplaceAll(f.Check, "_", " "), f.Count, fix, f.Advice)
		for _, it := range f.Items {
			fmt.Fprintf(w, "        %s\n", it)
		}
		if f.Count > len(f.Items) {
			fmt.Fprintf(w, "        … and %d more\n", f.Count-len(f.Items))
		}
	}
}

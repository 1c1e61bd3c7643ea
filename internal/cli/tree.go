package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/hierarchy"
)

func newTreeCmd(stdio IO) *cobra.Command {
	var (
		f      kbFlags
		depth  int
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "tree",
		Short: "Show the knowledge hierarchy: nodes from folders, with chunk counts and triggers",
		Long: `Show the knowledge hierarchy. Ingesting a folder makes a node per subfolder (the root, top-level
folders, deeper folders); each chunk hangs under its folder's node. Each line shows a node's
own chunks, the chunks of its whole subtree and its first triggers: keywords from its
chunks' headings and code symbols. Searching with --mode auto for a trigger jumps to its node.`,
		Example: `  quarry tree --depth 2
  quarry tree --json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if depth < 0 {
				return usageErr(fmt.Errorf("--depth must be 0 (everything) or more"))
			}
			ctx := cmd.Context()
			k, h, err := openHierarchy(ctx, &f)
			if err != nil {
				return err
			}
			defer k.Close()
			t, err := h.Tree(ctx)
			if err != nil {
				return err
			}
			t = t.Prune(depth)
			if asJSON {
				return writeJSON(stdio, t)
			}
			return t.Write(stdio.Out)
		},
	}
	f.register(cmd)
	cmd.Flags().IntVar(&depth, "depth", 0, "levels below the root to show (0: all)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the tree as JSON")
	return cmd
}

// openHierarchy opens the knowledge base and its collection's hierarchy,
// without insisting on the configured embedder (reading the tree embeds
// nothing).
func openHierarchy(ctx context.Context, f *kbFlags) (*quarry.KB, *hierarchy.Hierarchy, error) {
	k, err := openKB(ctx, f, false)
	if err != nil {
		return nil, nil, err
	}
	h, err := k.Hierarchy(ctx, quarry.Developer(), "")
	if err != nil {
		k.Close()
		return nil, nil, err
	}
	return k, h, nil
}

func writeJSON(stdio IO, v any) error {
	enc := json.NewEncoder(stdio.Out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// reportHierarchy says what an ingestion changed in the hierarchy (on
// stderr with --json, whose stdout holds only progress events).
func reportHierarchy(stdio IO, asJSON bool) func(*hierarchy.BuildReport, *hierarchy.LinkReport) {
	return func(br *hierarchy.BuildReport, lr *hierarchy.LinkReport) {
		w := stdio.Out
		if asJSON {
			w = stdio.Err
		}
		fmt.Fprintf(w, "hierarchy: %d nodes (%d new), %d chunks placed, %d links (see quarry tree)\n",
			br.Nodes, br.Created, br.Attached, lr.Total)
	}
}

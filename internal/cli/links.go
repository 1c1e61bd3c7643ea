package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry/hierarchy"
)

func newLinksCmd(stdio IO) *cobra.Command {
	var (
		f       kbFlags
		asJSON  bool
		format  string
		rebuild bool
	)
	cmd := &cobra.Command{
		Use:   "links",
		Short: "Show the links between knowledge nodes, heaviest first",
		Long: `Show the link graph of the knowledge hierarchy. Two nodes are linked when their triggers
overlap (weight: shared / all triggers of the two) or when chunks of one source hang under
both (weight: the smaller share of that source / the larger node); each link gives its
evidence. Links are rebuilt after every ingestion; --rebuild rebuilds them now.`,
		Example: `  quarry links
  quarry links --rebuild --json
  quarry links --format dot | dot -Tsvg > links.svg`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			k, h, err := openHierarchy(ctx, &f)
			if err != nil {
				return err
			}
			defer k.Close()
			if rebuild {
				if _, err := h.RebuildLinks(ctx); err != nil {
					return err
				}
			}
			if asJSON {
				format = "json"
			}
			if format != "text" && format != "json" && format != "dot" {
				return usageErr(fmt.Errorf("--format %q: use text, json or dot", format))
			}
			g, err := h.Graph(ctx)
			if err != nil {
				return err
			}
			if format == "dot" {
				return hierarchy.WriteDOT(stdio.Out, g)
			}
			if format == "json" {
				if g == nil {
					g = []hierarchy.GraphLink{}
				}
				return writeJSON(stdio, g)
			}
			return hierarchy.WriteGraph(stdio.Out, g)
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the links as JSON (--format json)")
	cmd.Flags().StringVar(&format, "format", "text", "text, json, or dot (Graphviz: quarry links --format dot | dot -Tsvg > links.svg)")
	cmd.Flags().BoolVar(&rebuild, "rebuild", false, "rebuild the links first")
	return cmd
}

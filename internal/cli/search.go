package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry"
)

func newSearchCmd(stdio IO) *cobra.Command {
	var (
		f       kbFlags
		mode    string
		topK    int
		filt    string
		raw     bool
		explain bool
		asJSON  bool
		profile string
	)
	cmd := &cobra.Command{
		Use:   "search QUERY",
		Short: "Search the knowledge base",
		Long: `Search the knowledge base by keywords (BM25), by meaning (vectors) or both (hybrid).

Results show the score, the source with its heading path or page, and a snippet with the
query's words highlighted. --filter takes any filter syntax (see quarry filter --help).`,
		Example: `  quarry search "how long do refunds take"
  quarry search "refunds" --mode hybrid --top-k 5 --filter "sourceName = 'policies/refunds.md'" --explain`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			fe, err := parseFilterFlag(filt)
			if err != nil {
				return err
			}
			_, spans, flush, err := tracing(ctx, nil, "search")
			if err != nil {
				return err
			}
			defer flush()
			k, err := openKB(ctx, &f, false, spans...)
			if err != nil {
				return err
			}
			defer k.Close()
			res, err := k.Search(ctx, quarry.Scope{AllowRawFilters: raw}, quarry.SearchRequest{Query: args[0], Mode: mode, Filter: fe,
				TopK: topK, Explain: explain, Hierarchy: true, Profile: profile})
			if err != nil {
				return cliErr(err)
			}
			if asJSON {
				return writeJSON(stdio, res) // the HTTP API's body, field for field
			}
			if explain {
				line := "mode " + res.Mode
				if res.Calibrated != "" {
					line = "mode " + res.Calibrated + " (the collection's calibrated default)"
				}
				fmt.Fprintln(stdio.Out, line)
			}
			if res.Trigger != nil {
				fmt.Fprintf(stdio.Out, "trigger %q → %s\n", args[0], res.Trigger.Path)
			}
			printHits(stdio.Out, res.Results, args[0], isTerminal(stdio.Out))
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&mode, "mode", "", "keyword, vector, hybrid, or auto: a node's chunks first when the query is one of its triggers, then the default (default: the rule for the collection's embedder)")
	cmd.Flags().IntVarP(&topK, "top-k", "k", 0, "number of results (default: search.top_k, 10)")
	cmd.Flags().StringVar(&filt, "filter", "", "metadata filter in any syntax")
	rawFilterFlag(cmd, &raw)
	cmd.Flags().StringVar(&filt, "where", "", "alias of --filter")
	cmd.Flags().BoolVar(&explain, "explain", false, "show each branch's rank and score")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print results as JSON")
	profileFlag(cmd, &profile)
	return cmd
}

// printHits prints passages with snippets and, when known, their place
// in the hierarchy.
func printHits(w io.Writer, hits []quarry.Passage, query string, color bool) {
	if len(hits) == 0 {
		fmt.Fprintln(w, "no results")
		return
	}
	mark := func(w string) string { return "«" + w + "»" }
	if color {
		mark = func(w string) string { return "\x1b[1m" + w + "\x1b[0m" }
	}
	for i, h := range hits {
		fmt.Fprintf(w, "%d. [%.4f] %s\n", i+1, h.Score, h.Location)
		if h.Explain != nil {
			var parts []string
			if b := h.Explain.Vector; b != nil {
				parts = append(parts, fmt.Sprintf("vector #%d %.4f", b.Rank, b.Score))
			}
			if b := h.Explain.Keyword; b != nil {
				parts = append(parts, fmt.Sprintf("keyword #%d %.4f", b.Rank, b.Score))
			}
			fmt.Fprintf(w, "   (%s)\n", strings.Join(parts, ", "))
		}
		fmt.Fprintf(w, "   %s\n", h.Snippet(query, 240, mark))
		if rc := h.Hierarchy; rc != nil && rc.Node != nil {
			line := "   in " + rc.Node.Path
			if len(rc.Neighbors) > 0 {
				var nb []string
				for _, n := range rc.Neighbors {
					nb = append(nb, fmt.Sprintf("%s (%s %.2f)", n.Name, n.Type, n.Weight))
				}
				line += "; see also " + strings.Join(nb, ", ")
			}
			if len(rc.Linked) > 0 {
				line += fmt.Sprintf("; linked to results %v", rc.Linked)
			}
			fmt.Fprintln(w, line)
		}
	}
}

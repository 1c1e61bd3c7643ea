package cli

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/index/bm25"
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
				TopK: topK, Explain: explain, Hierarchy: true})
			if err != nil {
				return cliErr(err)
			}
			if asJSON {
				return writeJSON(stdio, res.Results)
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
	return cmd
}

// printHits prints passages with snippets and, when known, their place
// in the hierarchy.
func printHits(w io.Writer, hits []quarry.Passage, query string, color bool) {
	if len(hits) == 0 {
		fmt.Fprintln(w, "no results")
		return
	}
	terms := highlightTerms(query)
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
		fmt.Fprintf(w, "   %s\n", snippet(h.Text, terms, 240, color))
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

// highlightTerms are the query's words worth highlighting: longer than two
// letters and not English stop words.
func highlightTerms(query string) map[string]bool {
	terms := map[string]bool{}
	an, _ := bm25.NewAnalyzer(bm25.AnalyzerConfig{}) // English stop words
	for _, t := range words(query) {
		if utf8.RuneCountInString(t) > 2 && (an == nil || len(an.Analyze(t)) > 0) {
			terms[t] = true
		}
	}
	return terms
}

// snippet returns the window of text with the most query terms, those
// words highlighted (bold on a terminal, «» otherwise).
func snippet(text string, terms map[string]bool, width int, color bool) string {
	ws := wordSpans(text)
	best, bestStart := -1, 0
	for i := range ws {
		score := 0
		for j := i; j < len(ws) && ws[j][1]-ws[i][0] <= width; j++ {
			if terms[strings.ToLower(text[ws[j][0]:ws[j][1]])] {
				score++
			}
		}
		if score > best {
			best, bestStart = score, ws[i][0]
		}
	}
	start, end := 0, min(len(text), width)
	if best > 0 && bestStart > 40 {
		// Begin a little before the first hit, at a word boundary.
		start = bestStart - 40
		for start > 0 && !unicode.IsSpace(rune(text[start-1])) {
			start--
		}
		end = min(len(text), bestStart+width-40)
	}
	for end < len(text) && !utf8.RuneStart(text[end]) {
		end++
	}
	var b strings.Builder
	if start > 0 {
		b.WriteString("…")
	}
	last := start
	for _, s := range ws {
		if s[0] < start || s[1] > end {
			continue
		}
		if terms[strings.ToLower(text[s[0]:s[1]])] {
			b.WriteString(text[last:s[0]])
			if color {
				b.WriteString("\x1b[1m" + text[s[0]:s[1]] + "\x1b[0m")
			} else {
				b.WriteString("«" + text[s[0]:s[1]] + "»")
			}
			last = s[1]
		}
	}
	b.WriteString(text[last:end])
	if end < len(text) {
		b.WriteString("…")
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

func words(s string) []string {
	var out []string
	for _, sp := range wordSpans(s) {
		out = append(out, strings.ToLower(s[sp[0]:sp[1]]))
	}
	return out
}

func wordSpans(s string) [][2]int {
	var out [][2]int
	start := -1
	for i, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			out = append(out, [2]int{start, i})
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, [2]int{start, len(s)})
	}
	return out
}

package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/hierarchy"
	"github.com/quarry-rag/quarry/index/bm25"
	"github.com/quarry-rag/quarry/store"
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
			k, err := openKB(ctx, &f, false)
			if err != nil {
				return err
			}
			defer k.Close()
			coll, err := k.collection(ctx, false, nil)
			if err != nil {
				return err
			}
			var fe filter.Expr
			if filt != "" {
				if fe, err = parseCollectionFilter(filt, coll.Config().Schema, raw); err != nil {
					return err
				}
			}
			if topK == 0 {
				topK = k.cfg.Search.TopK
			}
			if mode == "" {
				mode = k.cfg.Search.Mode
			}
			triggers := mode == modeTriggers
			if triggers {
				mode = ""
			}
			req := store.SearchRequest{Query: args[0], Mode: store.Mode(mode), Filter: fe, TopK: topK, Explain: explain}
			if req.Mode == store.ModeAuto {
				req.Mode = DefaultMode(k.embedder.Model())
			}
			if topK < 0 {
				return usageErr(fmt.Errorf("--top-k must be positive"))
			}
			hits, rc, node, err := searchInHierarchy(ctx, coll, k.embedder, req, triggers)
			if err != nil {
				return err
			}
			if asJSON {
				return printHitsJSON(stdio.Out, hits, rc)
			}
			if node != nil {
				fmt.Fprintf(stdio.Out, "trigger %q → %s\n", args[0], node.Path)
			}
			printHits(stdio.Out, hits, args[0], isTerminal(stdio.Out), rc...)
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

// DefaultMode is the search mode used when none is asked for. With the
// offline hash embedder it is keyword, fixed by measurement on SciFact and
// Cranfield together (nDCG@10, `quarry eval --beir DIR --mode all`):
//
//	               scifact  cranfield  average
//	keyword         0.6821     0.3520   0.5171
//	vector          0.4220     0.2436   0.3328
//	hybrid (RRF)    0.5482     0.3247   0.4365
//	hybrid vw 0.3   0.6230     0.3518   0.4874
//	hybrid convex   0.6687     0.3615   0.5151
//
// The hash embedder is lexical, so fusing it with BM25 does not pay on
// average. A semantic embedder earns hybrid.
func DefaultMode(m embed.ModelInfo) store.Mode {
	if m.Provider == "hash" {
		return store.ModeKeyword
	}
	return store.ModeHybrid
}

// search embeds the query when the mode needs a vector and searches.
func search(ctx context.Context, coll *store.Collection, emb embed.Embedder, req store.SearchRequest) ([]store.Hit, error) {
	if req.Mode != store.ModeKeyword {
		vecs, err := embed.EmbedQuery(ctx, emb, []string{req.Query})
		if err != nil {
			return nil, fmt.Errorf("embed the query: %w", err)
		}
		req.Embedding = vecs[0]
	}
	if req.Mode == store.ModeVector {
		req.Query = ""
	}
	return coll.Search(ctx, req)
}

// modeTriggers is the --mode that tries the hierarchy's triggers first.
const modeTriggers = "auto"

// searchInHierarchy searches, through the trigger fast path when triggers
// is set, and places the results in the collection's hierarchy (nil
// contexts when the store keeps none).
func searchInHierarchy(ctx context.Context, coll *store.Collection, emb embed.Embedder, req store.SearchRequest, triggers bool) ([]store.Hit, []hierarchy.ResultContext, *store.Node, error) {
	run := func(ctx context.Context, req store.SearchRequest) ([]store.Hit, error) {
		return search(ctx, coll, emb, req)
	}
	h, err := hierarchy.Open(coll)
	if errors.Is(err, store.ErrUnsupported) {
		hits, err := run(ctx, req)
		return hits, nil, nil, err
	}
	if err != nil {
		return nil, nil, nil, err
	}
	var hits []store.Hit
	var node *store.Node
	if triggers {
		hits, node, err = h.TriggerSearch(ctx, req, run)
	} else {
		hits, err = run(ctx, req)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	rc, err := h.Context(ctx, hits)
	if err != nil {
		return nil, nil, nil, err
	}
	return hits, rc, node, nil
}

type hitJSON struct {
	Rank       int                `json:"rank"`
	ID         string             `json:"id"`
	Score      float64            `json:"score"`
	SourceType string             `json:"sourceType"`
	SourceName string             `json:"sourceName"`
	Content    string             `json:"content"`
	Metadata   map[string]any     `json:"metadata"`
	Provenance any                `json:"provenance"`
	Explain    *store.Explanation `json:"explain,omitempty"`
	// The result's node, its neighbours and the results linked to it.
	hierarchy.ResultContext
}

// printHitsJSON prints hits with their places in the hierarchy (rc, when
// not nil, holds one per hit).
func printHitsJSON(w io.Writer, hits []store.Hit, rc []hierarchy.ResultContext) error {
	out := make([]hitJSON, len(hits))
	for i, h := range hits {
		out[i] = hitJSON{Rank: i + 1, ID: h.Doc.ID, Score: h.Doc.Score, SourceType: h.Doc.SourceType, SourceName: h.Doc.SourceName,
			Content: h.Doc.Content, Metadata: h.Doc.Metadata, Provenance: h.Doc.Provenance, Explain: h.Explain}
		if i < len(rc) {
			out[i].ResultContext = rc[i]
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// printHits prints hits with snippets; rc, when given, holds each hit's
// place in the hierarchy.
func printHits(w io.Writer, hits []store.Hit, query string, color bool, rc ...hierarchy.ResultContext) {
	if len(hits) == 0 {
		fmt.Fprintln(w, "no results")
		return
	}
	terms := highlightTerms(query)
	for i, h := range hits {
		d := h.Doc
		loc := d.SourceName
		p := d.Provenance
		switch {
		case p.Page > 0:
			loc += fmt.Sprintf(" · page %d", p.Page)
		case len(p.HeadingPath) > 0:
			loc += " · " + strings.Join(p.HeadingPath, " › ")
		}
		if p.LineStart > 0 {
			loc += fmt.Sprintf(" · lines %d-%d", p.LineStart, p.LineEnd)
		}
		fmt.Fprintf(w, "%d. [%.4f] %s\n", i+1, d.Score, loc)
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
		fmt.Fprintf(w, "   %s\n", snippet(d.Content, terms, 240, color))
		if i < len(rc) && rc[i].Node != nil {
			line := "   in " + rc[i].Node.Path
			if len(rc[i].Neighbors) > 0 {
				var nb []string
				for _, n := range rc[i].Neighbors {
					nb = append(nb, fmt.Sprintf("%s (%s %.2f)", n.Name, n.Type, n.Weight))
				}
				line += "; see also " + strings.Join(nb, ", ")
			}
			if len(rc[i].Linked) > 0 {
				line += fmt.Sprintf("; linked to results %v", rc[i].Linked)
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

package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/rerank/spec"
	"github.com/quarry-rag/quarry/retrieve"
)

// qualityFlags choose the query transforms, extra sources and
// post-processors of ask, chat, serve and eval; the core parses them
// (rerank/spec, retrieve.NewTransform).
type qualityFlags struct {
	transforms    []string
	post          []string
	web           string
	sourceTimeout time.Duration
}

func (q *qualityFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringSliceVar(&q.transforms, "transform", nil, "query transforms (need a chat model): "+retrieve.TransformNames)
	cmd.Flags().StringSliceVar(&q.post, "post", nil, spec.Help)
	cmd.Flags().StringVar(&q.web, "web", "", "also search the web, in parallel with the knowledge base (and as --agent's fallback): a SearXNG instance's URL, brave (BRAVE_SEARCH_API_KEY) or tavily (TAVILY_API_KEY); brave+pages and tavily+pages read the top results' pages")
	cmd.Flags().DurationVar(&q.sourceTimeout, "source-timeout", retrieve.DefaultSourceTimeout, "with --web: how long each source may take; a slow or failed source is reported, not fatal")
}

// options are the knowledge base options the flags set.
func (q *qualityFlags) options() []quarry.Option {
	opts := []quarry.Option{quarry.WithPost(q.post...), quarry.WithTransforms(q.transforms...)}
	if q.web != "" {
		opts = append(opts, quarry.WithWeb(q.web, q.sourceTimeout))
	}
	return opts
}

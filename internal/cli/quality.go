package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/llm"
	"github.com/quarry-rag/quarry/rag"
	"github.com/quarry-rag/quarry/rerank"
	"github.com/quarry-rag/quarry/rerank/cohere"
	"github.com/quarry-rag/quarry/rerank/jina"
	rllm "github.com/quarry-rag/quarry/rerank/llm"
	"github.com/quarry-rag/quarry/rerank/openailike"
	"github.com/quarry-rag/quarry/rerank/voyage"
	"github.com/quarry-rag/quarry/retrieve"
)

// qualityFlags choose the query transforms, extra sources and
// post-processors of ask, chat and eval.
type qualityFlags struct {
	transforms    []string
	post          []string
	web           string
	sourceTimeout time.Duration
}

const postHelp = `post-processors, in order: dedupe, mmr[=LAMBDA], threshold[=MIN], adaptive[=MULTIPLIER],
neighbours[=WINDOW], pack[=TOKENS], rerank=cohere|jina|voyage|llm|openai-compatible@URL|tei@URL`

func (q *qualityFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringSliceVar(&q.transforms, "transform", nil, "query transforms (need a chat model): rewrite, hyde, decompose, multi-query")
	cmd.Flags().StringSliceVar(&q.post, "post", nil, postHelp)
	cmd.Flags().StringVar(&q.web, "web", "", "also search the web through this SearXNG instance (its JSON API), in parallel with the knowledge base")
	cmd.Flags().DurationVar(&q.sourceTimeout, "source-timeout", retrieve.DefaultSourceTimeout, "with --web: how long each source may take; a slow or failed source is reported, not fatal")
}

// apply sets the pipeline's transforms, sources and post-processors.
func (q *qualityFlags) apply(pipe *rag.Pipeline, emb embed.Embedder) error {
	for _, t := range q.transforms {
		pre, err := transform(t, pipe.Model)
		if err != nil {
			return err
		}
		pipe.PreProcessors = append(pipe.PreProcessors, pre)
	}
	posts, err := postProcessors(q.post, pipe, emb)
	if err != nil {
		return err
	}
	pipe.PostProcessors = append(pipe.PostProcessors, posts...)
	if q.web != "" {
		pipe.Retriever = &retrieve.Parallel{Timeout: q.sourceTimeout, Sources: []retrieve.Source{
			{Name: "knowledge base", Retriever: pipe.Retriever},
			{Name: "web", Retriever: &retrieve.SearXNG{BaseURL: q.web}},
		}}
	}
	return nil
}

func transform(name string, model llm.ChatModel) (rag.PreProcessor, error) {
	if model == nil {
		return nil, usageErr(fmt.Errorf("--transform %s needs a chat model: set llm in config.toml, QUARRY_LLM or --model", name))
	}
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "rewrite":
		return retrieve.Rewrite{Model: model}, nil
	case "hyde":
		return retrieve.HyDE{Model: model}, nil
	case "decompose":
		return retrieve.Decompose{Model: model}, nil
	case "multi-query", "multiquery":
		return retrieve.MultiQuery{Model: model}, nil
	}
	return nil, usageErr(fmt.Errorf("--transform %q: use rewrite, hyde, decompose or multi-query", name))
}

// postProcessors builds a --post list.
func postProcessors(specs []string, pipe *rag.Pipeline, emb embed.Embedder) ([]rag.PostProcessor, error) {
	var out []rag.PostProcessor
	for _, s := range specs {
		name, arg, hasArg := strings.Cut(strings.TrimSpace(s), "=")
		num := func(def float64) (float64, error) {
			if !hasArg {
				return def, nil
			}
			v, err := strconv.ParseFloat(arg, 64)
			if err != nil {
				return 0, usageErr(fmt.Errorf("--post %s: %q is not a number", s, arg))
			}
			return v, nil
		}
		var p rag.PostProcessor
		switch strings.ToLower(name) {
		case "dedupe":
			v, err := num(rerank.DefaultSimilarity)
			if err != nil {
				return nil, err
			}
			p = rerank.Dedupe{Similarity: v}
		case "mmr":
			v, err := num(rerank.DefaultLambda)
			if err != nil {
				return nil, err
			}
			p = rerank.MMR{Lambda: v, Embedder: emb}
		case "threshold":
			v, err := num(rerank.DefaultThreshold)
			if err != nil {
				return nil, err
			}
			p = rerank.FixedThreshold{Min: v}
		case "adaptive":
			v, err := num(rerank.DefaultMultiplier)
			if err != nil {
				return nil, err
			}
			p = rerank.AdaptiveThreshold{Multiplier: v}
		case "neighbours", "neighbors":
			v, err := num(1)
			if err != nil {
				return nil, err
			}
			finder, ok := pipe.Retriever.(retrieve.NeighbourFinder)
			if !ok {
				return nil, usageErr(fmt.Errorf("--post %s: the retriever cannot look up neighbouring chunks", s))
			}
			p = rerank.Neighbours{Finder: finder, Window: int(v)}
		case "pack":
			v, err := num(rerank.DefaultBudget)
			if err != nil {
				return nil, err
			}
			p = &rerank.Pack{Budget: int(v)}
		case "rerank":
			r, err := reranker(arg, pipe.Model)
			if err != nil {
				return nil, err
			}
			p = r
		default:
			return nil, usageErr(fmt.Errorf("--post %q: unknown post-processor; %s", s, postHelp))
		}
		out = append(out, p)
	}
	return out, nil
}

// reranker builds a reranker from PROVIDER[:MODEL][@URL].
func reranker(spec string, model llm.ChatModel) (rag.PostProcessor, error) {
	prov, url, _ := strings.Cut(spec, "@")
	prov, name, _ := strings.Cut(prov, ":")
	var (
		p   rag.PostProcessor
		err error
	)
	switch strings.ToLower(prov) {
	case "cohere":
		p, err = cohere.New(cohere.Config{Model: name, Endpoint: url})
	case "jina":
		p, err = jina.New(jina.Config{Model: name, Endpoint: url})
	case "voyage":
		p, err = voyage.New(voyage.Config{Model: name, Endpoint: url})
	case "openai-compatible", "vllm":
		p, err = openailike.New(openailike.Config{BaseURL: url, Model: name})
	case "tei":
		p, err = openailike.New(openailike.Config{BaseURL: url, Model: name, Dialect: openailike.DialectTEI})
	case "llm":
		if model == nil {
			return nil, usageErr(fmt.Errorf("--post rerank=llm needs a chat model: set llm in config.toml, QUARRY_LLM or --model"))
		}
		p = &rllm.Reranker{Model: model}
	default:
		return nil, usageErr(fmt.Errorf("--post rerank=%q: use cohere, jina, voyage, llm, openai-compatible@URL or tei@URL", spec))
	}
	if err != nil {
		return nil, usageErr(fmt.Errorf("--post rerank=%s: %w", spec, err))
	}
	return p, nil
}

// Package spec builds post-processors from the specs people write
// (--post, config, a request's "post" list): "dedupe", "mmr=0.7",
// "rerank=cohere", "pack=4000". It is the one parser every surface uses,
// so a spec means the same thing on the command line, over HTTP and MCP.
package spec

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

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

// Help lists the post-processors, for help texts.
const Help = `post-processors, in order: dedupe, mmr[=LAMBDA], threshold[=MIN], adaptive[=MULTIPLIER],
neighbours[=WINDOW], pack[=TOKENS], rerank=cohere|jina|voyage|llm|openai-compatible@URL|tei@URL`

// ErrEndpoint is returned for a spec that names an address (@URL) where
// Env.AllowEndpoints is off: an address is the operator's to choose, since
// the server would call it.
var ErrEndpoint = errors.New("names an address, which only the operator may configure")

// Env is what post-processors are built against.
type Env struct {
	// Retriever is the pipeline's retriever; neighbours needs it to be a
	// retrieve.NeighbourFinder.
	Retriever retrieve.Retriever
	// Model is the chat model (rerank=llm); nil when none.
	Model llm.ChatModel
	// Embedder is the collection's embedder (mmr).
	Embedder embed.Embedder
	// AllowEndpoints accepts rerankers at an address the spec gives
	// (openai-compatible@URL, tei@URL, cohere@URL…): on for operators,
	// off for specs a request sends.
	AllowEndpoints bool
}

// Post builds the post-processors specs name, in order.
func Post(specs []string, env Env) ([]rag.PostProcessor, error) {
	out := make([]rag.PostProcessor, 0, len(specs))
	for _, s := range specs {
		p, err := post(strings.TrimSpace(s), env)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func post(s string, env Env) (rag.PostProcessor, error) {
	name, arg, hasArg := strings.Cut(s, "=")
	num := func(def float64) (float64, error) {
		if !hasArg {
			return def, nil
		}
		v, err := strconv.ParseFloat(arg, 64)
		if err != nil {
			return 0, fmt.Errorf("post-processor %s: %q is not a number", s, arg)
		}
		return v, nil
	}
	switch strings.ToLower(name) {
	case "dedupe":
		v, err := num(rerank.DefaultSimilarity)
		return rerank.Dedupe{Similarity: v}, err
	case "mmr":
		v, err := num(rerank.DefaultLambda)
		return rerank.MMR{Lambda: v, Embedder: env.Embedder}, err
	case "threshold":
		v, err := num(rerank.DefaultThreshold)
		return rerank.FixedThreshold{Min: v}, err
	case "adaptive":
		v, err := num(rerank.DefaultMultiplier)
		return rerank.AdaptiveThreshold{Multiplier: v}, err
	case "neighbours", "neighbors":
		v, err := num(1)
		if err != nil {
			return nil, err
		}
		finder, ok := env.Retriever.(retrieve.NeighbourFinder)
		if !ok {
			return nil, fmt.Errorf("post-processor %s: the retriever cannot look up neighbouring chunks", s)
		}
		return rerank.Neighbours{Finder: finder, Window: int(v)}, nil
	case "pack":
		v, err := num(rerank.DefaultBudget)
		return &rerank.Pack{Budget: int(v)}, err
	case "rerank":
		return reranker(arg, env)
	}
	return nil, fmt.Errorf("post-processor %q is unknown; %s", s, Help)
}

// reranker builds a reranker from PROVIDER[:MODEL][@URL].
func reranker(s string, env Env) (rag.PostProcessor, error) {
	prov, url, hasURL := strings.Cut(s, "@")
	if hasURL && !env.AllowEndpoints {
		return nil, fmt.Errorf("post-processor rerank=%s %w", s, ErrEndpoint)
	}
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
		if env.Model == nil {
			return nil, fmt.Errorf("post-processor rerank=llm %w", retrieve.ErrNeedsModel)
		}
		p = &rllm.Reranker{Model: env.Model}
	default:
		return nil, fmt.Errorf("post-processor rerank=%q: use cohere, jina, voyage, llm, openai-compatible@URL or tei@URL", s)
	}
	if err != nil {
		return nil, fmt.Errorf("post-processor rerank=%s: %w", s, err)
	}
	return p, nil
}

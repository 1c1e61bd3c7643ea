// Package spec opens the embedder a setting names, so the command line, the
// configuration file and servers agree on one syntax:
//
//	hash                                  offline default, 512 dimensions
//	hash:256                              offline, another dimension
//	static:/models/potion-base-8M         a model2vec model in a local directory
//	openai:text-embedding-3-small         OpenAI (OPENAI_API_KEY)
//	openai:text-embedding-3-large/1024    a reduced dimension, requested from the API
//	openai:BAAI/bge-m3@http://host:8000/v1  any OpenAI-compatible server
//	ollama:nomic-embed-text               Ollama at OLLAMA_HOST or localhost:11434
//	ollama:bge-m3@http://gpu-box:11434    another Ollama host
//	gemini:gemini-embedding-001/768       Gemini (GEMINI_API_KEY or GOOGLE_API_KEY)
//	voyage:voyage-3.5                     Voyage AI (VOYAGE_API_KEY)
//	cohere:embed-v4.0                     Cohere (COHERE_API_KEY)
//	mistral:mistral-embed                 Mistral AI (MISTRAL_API_KEY)
//	bedrock:amazon.titan-embed-text-v2:0  Amazon Bedrock (AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)
//
// In general PROVIDER[:MODEL][/DIMENSION][@URL]: the model may itself
// contain slashes and colons ("hf.co/org/model:Q8_0"); a final /DIMENSION
// of digits requests that vector size; @URL replaces the service's base
// URL (Ollama's host). A model left out means the provider's default.
// static takes a directory and nothing else.
package spec

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/embed/bedrock"
	"github.com/quarry-rag/quarry/embed/cohere"
	"github.com/quarry-rag/quarry/embed/gemini"
	"github.com/quarry-rag/quarry/embed/hash"
	"github.com/quarry-rag/quarry/embed/mistral"
	"github.com/quarry-rag/quarry/embed/ollama"
	"github.com/quarry-rag/quarry/embed/openai"
	"github.com/quarry-rag/quarry/embed/static"
	"github.com/quarry-rag/quarry/embed/voyage"
)

// Providers lists the provider names Open accepts.
const Providers = "hash, static:DIR, openai, ollama, gemini, voyage, cohere, mistral, bedrock"

// Spec is a parsed embedder setting.
type Spec struct {
	// Provider is the part before the first colon.
	Provider string
	// Model is the model name, empty for the provider's default.
	Model string
	// Dimension is the requested vector size, 0 for the model's own.
	Dimension int
	// URL is the base URL (Ollama's host), empty for the default.
	URL string
}

// Parse splits a setting into its parts.
func Parse(s string) (Spec, error) {
	var sp Spec
	name, rest, _ := strings.Cut(strings.TrimSpace(s), ":")
	sp.Provider = name
	if name == "" {
		return sp, fmt.Errorf("embedder %q: no provider (one of %s)", s, Providers)
	}
	if name == "hash" {
		if rest != "" {
			d, err := strconv.Atoi(rest)
			if err != nil {
				return sp, fmt.Errorf("embedder %q: hash takes an optional dimension, as in hash:512", s)
			}
			sp.Dimension = d
		}
		return sp, nil
	}
	if name == "static" {
		if rest == "" {
			return sp, fmt.Errorf("embedder %q: static takes a model directory, as in static:./models/potion-base-8M", s)
		}
		sp.Model = rest
		return sp, nil
	}
	rest, sp.URL, _ = strings.Cut(rest, "@")
	if i := strings.LastIndexByte(rest, '/'); i >= 0 {
		if d, err := strconv.Atoi(rest[i+1:]); err == nil {
			if d <= 0 {
				return sp, fmt.Errorf("embedder %q: dimension %d must be positive", s, d)
			}
			sp.Dimension, rest = d, rest[:i]
		}
	}
	sp.Model = rest
	if strings.Contains(s, "@") && sp.URL == "" {
		return sp, fmt.Errorf("embedder %q: nothing after @ (a base URL such as http://localhost:8000/v1)", s)
	}
	return sp, nil
}

// Open parses a setting and builds its embedder. An API embedder whose
// model's dimension is neither given nor known makes one call to learn it,
// under ctx.
func Open(ctx context.Context, s string) (embed.Embedder, error) {
	sp, err := Parse(s)
	if err != nil {
		return nil, err
	}
	var e embed.Embedder
	switch sp.Provider {
	case "hash":
		e, err = hash.New(hash.Config{Dimension: sp.Dimension})
	case "static":
		e, err = static.New(static.Config{Dir: sp.Model})
	case "openai":
		e, err = openai.New(ctx, openai.Config{Model: sp.Model, BaseURL: sp.URL, Dimension: sp.Dimension})
	case "ollama":
		e, err = ollama.New(ctx, ollama.Config{Model: sp.Model, Host: sp.URL, Dimension: sp.Dimension})
	case "gemini":
		e, err = gemini.New(ctx, gemini.Config{Model: sp.Model, BaseURL: sp.URL, Dimension: sp.Dimension})
	case "voyage":
		e, err = voyage.New(ctx, voyage.Config{Model: sp.Model, BaseURL: sp.URL, Dimension: sp.Dimension})
	case "cohere":
		e, err = cohere.New(ctx, cohere.Config{Model: sp.Model, BaseURL: sp.URL, Dimension: sp.Dimension})
	case "mistral":
		e, err = mistral.New(ctx, mistral.Config{Model: sp.Model, BaseURL: sp.URL, Dimension: sp.Dimension})
	case "bedrock":
		e, err = bedrock.New(ctx, bedrock.Config{Model: sp.Model, BaseURL: sp.URL, Dimension: sp.Dimension})
	default:
		return nil, fmt.Errorf("embedder %q is not available in this build (available: %s)", s, Providers)
	}
	if err != nil {
		return nil, fmt.Errorf("embedder %q: %w", s, err)
	}
	return e, nil
}

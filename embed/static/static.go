// Package static is a pure-Go embedder for model2vec static models: a
// directory holding tokenizer.json (a Hugging Face WordPiece tokenizer with
// the BERT normaliser and pre-tokeniser) and model.safetensors (one row per
// token), optionally config.json ({"normalize": true}).
//
// A text's vector is the mean of its tokens' rows, unknown tokens left out
// as model2vec does, L2-normalised when the model or the Config says so.
// No network, no cgo: thousands of texts a second on one core.
package static

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/quarry-rag/quarry/embed"
)

// DefaultMaxTokens is how many tokens of a text count, as in model2vec.
const DefaultMaxTokens = 512

// Config configures the embedder.
type Config struct {
	// Dir is the model directory.
	Dir string
	// Normalize, when not nil, overrides config.json's "normalize" (true
	// when the file is absent).
	Normalize *bool
	// MaxTokens bounds the tokens of a text: DefaultMaxTokens when 0.
	MaxTokens int
}

// Embedder is a loaded static model. It is safe for concurrent use.
type Embedder struct {
	tok       *wordPiece
	table     []float32 // vocabulary × dim, row-major
	dim       int
	normalize bool
	maxTokens int
	info      embed.ModelInfo
}

// New loads the model in cfg.Dir.
func New(cfg Config) (*Embedder, error) {
	if cfg.Dir == "" {
		return nil, fmt.Errorf("static embedder: no model directory")
	}
	tj, err := os.ReadFile(filepath.Join(cfg.Dir, "tokenizer.json"))
	if err != nil {
		return nil, fmt.Errorf("static embedder: %w", err)
	}
	tok, err := parseTokenizer(tj)
	if err != nil {
		return nil, fmt.Errorf("static embedder: %s: %w", filepath.Join(cfg.Dir, "tokenizer.json"), err)
	}
	st, err := os.ReadFile(filepath.Join(cfg.Dir, "model.safetensors"))
	if err != nil {
		return nil, fmt.Errorf("static embedder: %w", err)
	}
	table, rows, dim, err := readEmbeddings(st)
	if err != nil {
		return nil, fmt.Errorf("static embedder: %s: %w", filepath.Join(cfg.Dir, "model.safetensors"), err)
	}
	if tok.maxID >= rows {
		return nil, fmt.Errorf("static embedder: tokenizer ids reach %d but the model has %d rows", tok.maxID, rows)
	}
	normalize := true
	if b, err := os.ReadFile(filepath.Join(cfg.Dir, "config.json")); err == nil {
		var c struct {
			Normalize *bool `json:"normalize"`
		}
		if err := json.Unmarshal(b, &c); err != nil {
			return nil, fmt.Errorf("static embedder: config.json: %w", err)
		}
		if c.Normalize != nil {
			normalize = *c.Normalize
		}
	}
	if cfg.Normalize != nil {
		normalize = *cfg.Normalize
	}
	e := &Embedder{tok: tok, table: table, dim: dim, normalize: normalize, maxTokens: cfg.MaxTokens}
	if e.maxTokens <= 0 {
		e.maxTokens = DefaultMaxTokens
	}
	// The model name carries a digest of the weights and vocabulary: two
	// directories of the same name may hold different models.
	h := sha256.New()
	h.Write(tj)
	h.Write(st)
	name := fmt.Sprintf("%s-%s", filepath.Base(filepath.Clean(cfg.Dir)), hex.EncodeToString(h.Sum(nil))[:12])
	if !normalize {
		name += "-raw"
	}
	e.info = embed.ModelInfo{Provider: "static", Model: name, Dimension: dim, Normalized: normalize}
	return e, nil
}

// Model implements embed.Embedder.
func (e *Embedder) Model() embed.ModelInfo { return e.info }

// Embed implements embed.Embedder. A text with no known token gets a zero
// vector.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	out := make([][]float32, len(texts))
	flat := make([]float32, len(texts)*e.dim)
	ids := make([]int32, 0, 64)
	for i, t := range texts {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		v := flat[i*e.dim : (i+1)*e.dim : (i+1)*e.dim]
		ids = e.tok.encode(t, ids[:0], e.maxTokens)
		e.pool(v, ids)
		out[i] = v
	}
	return out, nil
}

func (e *Embedder) pool(v []float32, ids []int32) {
	if len(ids) == 0 {
		return
	}
	for _, id := range ids {
		row := e.table[int(id)*e.dim : (int(id)+1)*e.dim]
		for j, x := range row {
			v[j] += x
		}
	}
	var s float64
	inv := float32(1) / float32(len(ids))
	for j := range v {
		v[j] *= inv
		s += float64(v[j]) * float64(v[j])
	}
	if e.normalize && s > 0 {
		n := float32(1 / math.Sqrt(s))
		for j := range v {
			v[j] *= n
		}
	}
}

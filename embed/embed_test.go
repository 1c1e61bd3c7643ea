package embed_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/quarry-rag/quarry/embed"
)

// fake embeds a text as [len(text), 1] and records its calls.
type fake struct {
	calls [][]string
	dim   int
	fail  bool
}

func (f *fake) Model() embed.ModelInfo {
	return embed.ModelInfo{Provider: "fake", Model: "len", Dimension: f.dim}
}

func (f *fake) Embed(_ context.Context, texts []string) ([][]float32, error) {
	f.calls = append(f.calls, texts)
	if f.fail {
		return nil, errors.New("boom")
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = []float32{float32(len(t)), 1}[:f.dim]
	}
	return out, nil
}

func TestBatched(t *testing.T) {
	f := &fake{dim: 2}
	texts := make([]string, 10)
	for i := range texts {
		texts[i] = strings.Repeat("x", i)
	}
	vecs, err := embed.Batched{Embedder: f, Size: 4}.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.calls) != 3 || len(f.calls[0]) != 4 || len(f.calls[2]) != 2 {
		t.Errorf("calls %v", f.calls)
	}
	for i, v := range vecs {
		if v[0] != float32(i) {
			t.Fatalf("vector %d out of order: %v", i, v)
		}
	}
	f.calls = nil
	if v, err := (embed.Batched{Embedder: f}).Embed(context.Background(), nil); err != nil || v == nil && len(f.calls) != 0 {
		t.Errorf("empty input made %d calls", len(f.calls))
	}
	bad := &fake{dim: 1}
	bad.dim = 1
	wrong := embed.Func{Info: embed.ModelInfo{Provider: "p", Model: "m", Dimension: 3}, Fn: bad.Embed}
	if _, err := (embed.Batched{Embedder: wrong}).Embed(context.Background(), []string{"a"}); err == nil || !strings.Contains(err.Error(), "dimension") {
		t.Errorf("wrong dimension: %v", err)
	}
	f.fail = true
	if _, err := (embed.Batched{Embedder: f, Size: 2}).Embed(context.Background(), texts); err == nil || !strings.Contains(err.Error(), "texts 0-1") {
		t.Errorf("failure: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (embed.Batched{Embedder: &fake{dim: 2}}).Embed(ctx, texts); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// mapCache is an in-memory embed.Cache.
type mapCache struct {
	mu sync.Mutex
	m  map[string][]float32
}

func (c *mapCache) Get(_ context.Context, m embed.ModelInfo, keys []string) (map[string][]float32, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string][]float32{}
	for _, k := range keys {
		if v, ok := c.m[m.String()+k]; ok {
			out[k] = v
		}
	}
	return out, nil
}

func (c *mapCache) Put(_ context.Context, m embed.ModelInfo, vecs map[string][]float32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, v := range vecs {
		c.m[m.String()+k] = v
	}
	return nil
}

func TestCached(t *testing.T) {
	f := &fake{dim: 2}
	c := embed.Cached{Embedder: f, Cache: &mapCache{m: map[string][]float32{}}}
	first, err := c.Embed(context.Background(), []string{"a", "bb", "a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.calls) != 1 || len(f.calls[0]) != 2 {
		t.Errorf("duplicates embedded twice: %v", f.calls)
	}
	second, _ := c.Embed(context.Background(), []string{"bb", "ccc", "a"})
	if len(f.calls) != 2 || fmt.Sprint(f.calls[1]) != "[ccc]" {
		t.Errorf("cache misses: %v", f.calls)
	}
	if second[0][0] != first[1][0] || second[2][0] != first[0][0] || second[1][0] != 3 {
		t.Errorf("vectors %v %v", first, second)
	}
	if c.Model() != f.Model() || embed.CacheKey("a") == embed.CacheKey("b") {
		t.Error("model or keys")
	}
}

func TestModelInfo(t *testing.T) {
	if err := (embed.ModelInfo{Provider: "p", Model: "m", Dimension: 0}).Check(); err == nil {
		t.Error("zero dimension accepted")
	}
	if err := (embed.ModelInfo{Model: "m", Dimension: 3}).Check(); err == nil {
		t.Error("missing provider accepted")
	}
	if s := (embed.ModelInfo{Provider: "p", Model: "m", Dimension: 3}).String(); s != "p:m/3" {
		t.Errorf("String = %s", s)
	}
}

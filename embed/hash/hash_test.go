package hash

import (
	"context"
	"math"
	"testing"

	"github.com/quarry-rag/quarry/document"
)

func embedOne(t *testing.T, e *Embedder, s string) []float32 {
	t.Helper()
	v, err := e.Embed(context.Background(), []string{s})
	if err != nil {
		t.Fatal(err)
	}
	return v[0]
}

func TestHashEmbedder(t *testing.T) {
	e, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	m := e.Model()
	if m.Dimension != 512 || !m.Normalized || m.Provider != "hash" {
		t.Errorf("model %+v", m)
	}
	for _, s := range []string{"Refunds take five days.", "", "---", "日本語のテキスト", "a a a a"} {
		v := embedOne(t, e, s)
		if err := document.CheckVector(v, 512); err != nil {
			t.Errorf("%q: %v", s, err)
		}
		var n float64
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		if math.Abs(n-1) > 1e-5 {
			t.Errorf("%q: norm² %v", s, n)
		}
	}
	a := embedOne(t, e, "How long do refunds take?")
	same := embedOne(t, e, "How long do refunds take?")
	near := embedOne(t, e, "refund timing: refunds take five days")
	far := embedOne(t, e, "The cluster uses a write-ahead log for durability.")
	if sim(a, same) < 0.99999 {
		t.Error("not deterministic")
	}
	if sim(a, near) <= sim(a, far) {
		t.Errorf("lexical overlap does not bring texts closer: near %v far %v", sim(a, near), sim(a, far))
	}
	// Character n-grams tolerate inflection and typos.
	if s := sim(embedOne(t, e, "refund"), embedOne(t, e, "refunds")); s < 0.3 || s <= sim(embedOne(t, e, "refund"), embedOne(t, e, "durable"))+0.2 {
		t.Error("inflected forms are far apart")
	}
}

func sim(a, b []float32) float64 {
	s, _ := document.Cosine(a, b)
	return s
}

func TestConfig(t *testing.T) {
	if _, err := New(Config{Dimension: 1}); err == nil {
		t.Error("dimension 1 accepted")
	}
	if _, err := New(Config{MinGram: 4, MaxGram: 3}); err == nil {
		t.Error("empty n-gram range accepted")
	}
	e, _ := New(Config{Dimension: 64})
	if got := e.Model(); got.Dimension != 64 || got.Model == "" {
		t.Errorf("model %+v", got)
	}
	d, _ := New(Config{})
	if e.Model().Model == d.Model().Model {
		t.Error("different settings share a model name")
	}
}

func BenchmarkEmbed(b *testing.B) {
	e, _ := New(Config{})
	text := "PostgreSQL uses a write-ahead log (WAL) to ensure durability: changes are logged before data pages are written, so after a crash the log is replayed. Checkpoints bound the replay."
	texts := make([]string, 64)
	for i := range texts {
		texts[i] = text
	}
	b.SetBytes(int64(len(text) * len(texts)))
	for b.Loop() {
		if _, err := e.Embed(context.Background(), texts); err != nil {
			b.Fatal(err)
		}
	}
}

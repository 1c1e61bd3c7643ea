package static

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeModel writes a model2vec directory: the vocabulary, one row per
// token id, as F32 or F16, and config.json when normalize is not nil.
func writeModel(t testing.TB, vocab map[string]int32, rows [][]float32, dtype string, normalize *bool) string {
	t.Helper()
	dir := t.TempDir()
	tok := map[string]any{
		"version":       "1.0",
		"normalizer":    map[string]any{"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": nil, "lowercase": true},
		"pre_tokenizer": map[string]any{"type": "BertPreTokenizer"},
		"model":         map[string]any{"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100, "vocab": vocab},
	}
	b, _ := json.Marshal(tok)
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	var data []byte
	for _, r := range rows {
		for _, x := range r {
			if dtype == "F16" {
				data = binary.LittleEndian.AppendUint16(data, floatToHalf(x))
			} else {
				data = binary.LittleEndian.AppendUint32(data, math.Float32bits(x))
			}
		}
	}
	header, _ := json.Marshal(map[string]any{
		"__metadata__": map[string]string{"format": "pt"},
		"embeddings":   map[string]any{"dtype": dtype, "shape": []int{len(rows), len(rows[0])}, "data_offsets": []int{0, len(data)}},
	})
	file := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	file = append(append(file, header...), data...)
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors"), file, 0o644); err != nil {
		t.Fatal(err)
	}
	if normalize != nil {
		c, _ := json.Marshal(map[string]any{"model_type": "model2vec", "normalize": *normalize, "hidden_dim": len(rows[0])})
		if err := os.WriteFile(filepath.Join(dir, "config.json"), c, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// floatToHalf is exact for the small values the tests use.
func floatToHalf(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	if f == 0 {
		return sign
	}
	exp := int(b>>23&0xff) - 127 + 15
	return sign | uint16(exp)<<10 | uint16(b>>13&0x3ff)
}

var tinyVocab = map[string]int32{"[UNK]": 0, "[PAD]": 1, "hello": 2, "world": 3, "un": 4, "##believ": 5, "##able": 6, ",": 7, "cafe": 8, "中": 9}

var tinyRows = [][]float32{
	{9, 9, 9}, // [UNK]: never used
	{9, 9, 9}, // [PAD]
	{1, 0, 0}, // hello
	{0, 2, 0}, // world
	{0, 0, 4}, // un
	{2, 0, 0}, // ##believ
	{0, 1, 0}, // ##able
	{0, 0, 1}, // ,
	{0.5, 0.5, 0},
	{-1, 0, 0},
}

func embedAll(t *testing.T, e *Embedder, texts ...string) [][]float32 {
	t.Helper()
	v, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func near(a, b []float32) bool {
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > 1e-6 {
			return false
		}
	}
	return len(a) == len(b)
}

func TestVectorsByHand(t *testing.T) {
	for _, dtype := range []string{"F32", "F16"} {
		f := false
		e, err := New(Config{Dir: writeModel(t, tinyVocab, tinyRows, dtype, &f)})
		if err != nil {
			t.Fatal(err)
		}
		m := e.Model()
		if m.Provider != "static" || m.Dimension != 3 || m.Normalized || !strings.HasSuffix(m.Model, "-raw") {
			t.Errorf("%s: model %+v", dtype, m)
		}
		got := embedAll(t, e, "Hello, world!", "unbelievable", "CAFÉ", "xyz qqq", "中", "")
		want := [][]float32{
			{1.0 / 3, 2.0 / 3, 1.0 / 3}, // hello , world; "!" unknown, left out
			{2.0 / 3, 1.0 / 3, 4.0 / 3}, // un ##believ ##able
			{0.5, 0.5, 0},               // lowercased, accent stripped
			{0, 0, 0},                   // nothing known
			{-1, 0, 0},
			{0, 0, 0},
		}
		for i := range want {
			if !near(got[i], want[i]) {
				t.Errorf("%s: text %d: %v, want %v", dtype, i, got[i], want[i])
			}
		}
	}
}

func TestNormalizedAndTruncated(t *testing.T) {
	e, err := New(Config{Dir: writeModel(t, tinyVocab, tinyRows, "F32", nil), MaxTokens: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !e.Model().Normalized {
		t.Error("normalisation is the default without config.json")
	}
	got := embedAll(t, e, "world", "hello world un")
	if !near(got[0], []float32{0, 1, 0}) {
		t.Errorf("%v", got[0])
	}
	s := float32(1 / math.Sqrt(5)) // mean of hello and world, the third token cut
	if !near(got[1], []float32{s, 2 * s, 0}) {
		t.Errorf("%v", got[1])
	}
	other, err := New(Config{Dir: writeModel(t, tinyVocab, append(tinyRows[:9:9], []float32{1, 1, 1}), "F32", nil)})
	if err != nil {
		t.Fatal(err)
	}
	if other.Model() == e.Model() {
		t.Error("two different models share an identity")
	}
}

func TestBadModels(t *testing.T) {
	if _, err := New(Config{Dir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "tokenizer.json") {
		t.Errorf("empty directory: %v", err)
	}
	if _, err := New(Config{Dir: writeModel(t, tinyVocab, tinyRows[:5], "F32", nil)}); err == nil || !strings.Contains(err.Error(), "rows") {
		t.Errorf("short table: %v", err)
	}
}

func BenchmarkEmbed256(b *testing.B) {
	vocab := map[string]int32{"[UNK]": 0}
	words := make([]string, 5000)
	for i := range words {
		words[i] = fmt.Sprintf("w%dx", i)
		vocab[words[i]] = int32(i + 1)
	}
	rows := make([][]float32, len(vocab))
	for i := range rows {
		rows[i] = make([]float32, 256)
		rows[i][i%256] = 1
	}
	e, err := New(Config{Dir: writeModel(b, vocab, rows, "F32", nil)})
	if err != nil {
		b.Fatal(err)
	}
	texts := make([]string, 1000)
	for i := range texts {
		var sb strings.Builder
		for j := range 12 {
			sb.WriteString(words[(i*31+j*97)%len(words)])
			sb.WriteString(" ")
		}
		texts[i] = sb.String() + "Unknown, words!"
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := e.Embed(context.Background(), texts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(texts))/b.Elapsed().Seconds(), "texts/s")
}

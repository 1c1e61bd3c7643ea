package document_test

import (
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/document"
)

func TestChunkIDIsDeterministic(t *testing.T) {
	// Pinned: changing the recipe would turn every re-ingest into duplicates.
	const want = "1740cb0d4d78270246ce183bce715fff" // computed independently with Python hashlib
	got := document.ChunkID("file", "docs/a.md", 0, "hello")
	if len(got) != 32 || strings.ToLower(got) != got {
		t.Fatalf("ChunkID = %q: want 32 lowercase hex digits", got)
	}
	if got != document.ChunkID("file", "docs/a.md", 0, "hello") {
		t.Fatal("ChunkID is not deterministic")
	}
	if got != want {
		t.Errorf("ChunkID = %s, want %s", got, want)
	}
	for _, other := range []string{
		document.ChunkID("file", "docs/a.md", 1, "hello"),
		document.ChunkID("file", "docs/a.md", 0, "hello!"),
		document.ChunkID("url", "docs/a.md", 0, "hello"),
		document.ChunkID("file", "docs/a.m", 0, "dhello"),
	} {
		if other == got {
			t.Errorf("distinct chunks share id %s", got)
		}
	}
}

func TestFileSource(t *testing.T) {
	root := t.TempDir()
	tests := []struct {
		path    string
		want    string
		wantErr bool
	}{
		{filepath.Join(root, "a.md"), "a.md", false},
		{filepath.Join(root, "sub", "dir", "b.txt"), "sub/dir/b.txt", false},
		{filepath.Join(root, "..", "escape.txt"), "", true},
		{root, filepath.Base(root), false},
	}
	for _, tt := range tests {
		got, err := document.FileSource(root, tt.path)
		if (err != nil) != tt.wantErr {
			t.Errorf("FileSource(%s): err %v", tt.path, err)
			continue
		}
		if !tt.wantErr && (got.Type != "file" || got.Name != tt.want) {
			t.Errorf("FileSource(%s) = %+v, want file %s", tt.path, got, tt.want)
		}
	}
}

func TestNormalizeURL(t *testing.T) {
	tests := map[string]string{
		"HTTPS://Example.COM":                "https://example.com/",
		"http://example.com:80/a/./b/../c#x": "http://example.com/a/c",
		"https://example.com:8443/docs/?q=1": "https://example.com:8443/docs/?q=1",
		"https://[::1]:443/x":                "https://[::1]/x",
		"https://example.com/a%20b":          "https://example.com/a%20b",
	}
	for in, want := range tests {
		got, err := document.NormalizeURL(in)
		if err != nil || got != want {
			t.Errorf("NormalizeURL(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"/relative", "example.com", "::"} {
		if _, err := document.URLSource(bad); err == nil {
			t.Errorf("URLSource(%q) accepted", bad)
		}
	}
}

func TestCheckVector(t *testing.T) {
	tests := []struct {
		v    []float32
		dim  int
		want error
	}{
		{[]float32{1, 0, 0}, 3, nil},
		{[]float32{0.5, -0.5}, 0, nil},
		{nil, 0, document.ErrEmptyVector},
		{[]float32{}, 3, document.ErrEmptyVector},
		{[]float32{1, 2}, 3, document.ErrDimension},
		{[]float32{float32(math.NaN()), 1}, 0, document.ErrNonFinite},
		{[]float32{float32(math.Inf(-1)), 1}, 0, document.ErrNonFinite},
		{[]float32{0, 0, 0}, 3, document.ErrZeroNorm},
		{[]float32{1e20, 0, 0}, 3, document.ErrNormOverflow},
	}
	for _, tt := range tests {
		err := document.CheckVector(tt.v, tt.dim)
		if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
			t.Errorf("CheckVector(%v, %d) = %v, want %v", tt.v, tt.dim, err, tt.want)
		}
	}
}

func TestCosine(t *testing.T) {
	s, err := document.Cosine([]float32{1, 0}, []float32{-1, 0})
	if err != nil || s != -1 {
		t.Errorf("opposite vectors: %v %v", s, err)
	}
	s, err = document.Cosine([]float32{0, 0}, []float32{0, 0})
	if err != nil || s != 0 || math.IsNaN(s) {
		t.Errorf("zero vectors: %v %v", s, err)
	}
}

func TestDocumentJSON(t *testing.T) {
	in := `{"id":"d1","content":"Refunds take 5 days.","sourceType":"file","sourceName":"a.md",
		"metadata":{"year":2026,"price":9.0,"tags":["a"],"nested":{"k":[1,2.5]}},
		"embedding":[0.5,-0.5],"score":0,"provenance":{"source":"a.md","lineStart":3,"lineEnd":4,"headingPath":["Refunds"]}}`
	var d document.Document
	if err := json.Unmarshal([]byte(in), &d); err != nil {
		t.Fatal(err)
	}
	if d.Metadata["year"] != int64(2026) || d.Metadata["price"] != 9.0 {
		t.Errorf("number kinds lost: %#v", d.Metadata)
	}
	if !d.Scored || d.Score != 0 {
		t.Error("a zero score must stay a score")
	}
	if d.Provenance.LineStart != 3 || !reflect.DeepEqual(d.Provenance.HeadingPath, []string{"Refunds"}) {
		t.Errorf("provenance: %+v", d.Provenance)
	}
	out, err := json.Marshal(&d)
	if err != nil {
		t.Fatal(err)
	}
	var back document.Document
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, d) {
		t.Errorf("round trip changed the document:\n%+v\n%+v", d, back)
	}

	var defaults document.Document
	if err := json.Unmarshal([]byte(`{"content":"x"}`), &defaults); err != nil {
		t.Fatal(err)
	}
	if defaults.SourceType != "manual" || defaults.SourceName != "manual" || defaults.Scored || defaults.Embedding != nil {
		t.Errorf("defaults: %+v", defaults)
	}
	out, _ = json.Marshal(document.New("x"))
	if !strings.Contains(string(out), `"score":null`) || !strings.Contains(string(out), `"embedding":null`) {
		t.Errorf("unscored, unembedded document: %s", out)
	}

	for _, bad := range []string{
		`{"embedding":[1,null]}`, `{"embedding":[1,"2"]}`, `{"embedding":[true]}`, `{"embedding":[]}`,
		`{"embedding":[0,0]}`, `{"metadata":[1]}`, `{"conten":"typo"}`, `{"score":"high"}`,
	} {
		if err := json.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

func TestMetadataRules(t *testing.T) {
	d := document.New("x")
	tests := []struct {
		key   string
		value any
		ok    bool
	}{
		{"lang", "en", true},
		{"Content", "ok: keys are case-sensitive", true},
		{"list", []any{1, "a", nil, map[string]any{"x": true}}, true},
		{"typed", []string{"a"}, true},
		{"", "x", false},
		{"id", "x", false},
		{"_quarry_internal", 1, false},
		{"nan", math.NaN(), false},
		{"inf", []any{math.Inf(1)}, false},
		{"bytes", []byte("x"), false},
		{"bad_utf8", "\xb1\x31", false},
		{"struct", struct{}{}, false},
		{"func", func() {}, false},
		{"ptr", new(int), false},
		{"intmap", map[int]string{1: "a"}, false},
	}
	for _, tt := range tests {
		err := d.SetMetadata(tt.key, tt.value)
		if (err == nil) != tt.ok {
			t.Errorf("SetMetadata(%q, %v) = %v", tt.key, tt.value, err)
		}
		if err != nil && tt.key != "" && !strings.Contains(err.Error(), tt.key) {
			t.Errorf("error %q does not name key %q", err, tt.key)
		}
	}
	if err := d.AddMetadata(map[string]any{"fine": 1, "score": 2}); err == nil {
		t.Error("AddMetadata accepted a reserved key")
	}
	if _, ok := d.Metadata["fine"]; ok {
		t.Error("AddMetadata wrote part of a rejected batch")
	}
}

func TestValidateDocument(t *testing.T) {
	s, err := document.ParseSchema([]byte(`{"fields":[
		{"name":"tenant","type":"string","required":true,"filterable":true},
		{"name":"year","type":"integer","required":true},
		{"name":"price","type":"float"},
		{"name":"tags","type":"string[]","filterable":true},
		{"name":"flags","type":"boolean[]"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		md     map[string]any
		field  string
		reason document.Reason
	}{
		{map[string]any{"tenant": "a", "year": int64(2026), "extra": map[string]any{"x": 1}}, "", ""},
		{map[string]any{"tenant": "a", "year": 2026, "price": 3}, "", ""},
		{map[string]any{"year": "x"}, "tenant", document.ReasonRequired},
		{map[string]any{"tenant": nil, "year": 1}, "tenant", document.ReasonRequired},
		{map[string]any{"tenant": "a", "year": 2026.0}, "year", document.ReasonType},
		{map[string]any{"tenant": "a", "year": true}, "year", document.ReasonType},
		{map[string]any{"tenant": "a", "year": 1, "price": "9.99"}, "price", document.ReasonType},
		{map[string]any{"tenant": "a", "year": 1, "tags": []any{}}, "tags", document.ReasonType},
		{map[string]any{"tenant": "a", "year": 1, "tags": []any{"a", 1}}, "tags", document.ReasonType},
		{map[string]any{"tenant": "a", "year": 1, "tags": map[string]any{"a": "b"}}, "tags", document.ReasonType},
		{map[string]any{"tenant": "a", "year": 1, "flags": []any{true, false}}, "", ""},
	}
	for i, tt := range tests {
		d := document.New("x")
		d.ID = "doc-1"
		d.Metadata = tt.md
		err := s.ValidateDocument(d)
		if tt.reason == "" {
			if err != nil {
				t.Errorf("%d: %v", i, err)
			}
			continue
		}
		var ve *document.ValidationError
		if !errors.As(err, &ve) || ve.Reason != tt.reason || ve.Field != tt.field {
			t.Errorf("%d: got %v, want %s on %s", i, err, tt.reason, tt.field)
			continue
		}
		if !strings.Contains(err.Error(), "doc-1") || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("%d: %q should name the document and field", i, err)
		}
	}
}

func TestSchemaRules(t *testing.T) {
	bad := []string{
		`{"fields":[{"name":"a","type":"string"},{"name":"a","type":"integer"}]}`,
		`{"fields":[{"name":"a","type":"text"}]}`,
		`{"fields":[{"name":"a-b","type":"string"}]}`,
		`{"fields":[{"name":"sourceType","type":"string"}]}`,
		`{"fields":[{"name":"_quarry_x","type":"string"}]}`,
		`{"fields":[{"name":"r","type":"integer[]","filterable":true}]}`,
		`{"fields":[{"name":"a","type":"string","indexed":true}]}`,
		`{"fields":[]} {}`,
	}
	for _, b := range bad {
		if _, err := document.ParseSchema([]byte(b)); err == nil {
			t.Errorf("ParseSchema accepted %s", b)
		}
	}
	s, err := document.NewSchema(document.Field{Name: "tags", Type: document.TypeStringList, Filterable: true})
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := s.Lookup("sourceName"); !ok || !f.Required || !f.Filterable {
		t.Error("built-in sourceName missing")
	}
	var none *document.Schema
	if _, err := none.Filterable("sourceType"); err != nil {
		t.Errorf("nil schema must know the built-ins: %v", err)
	}
}

func TestClone(t *testing.T) {
	d := document.New("x")
	d.Metadata["tags"] = []any{"a"}
	d.Embedding = []float32{1}
	c := d.Clone()
	c.Metadata["tags"].([]any)[0] = "changed"
	c.Embedding[0] = 2
	if d.Metadata["tags"].([]any)[0] != "a" || d.Embedding[0] != 1 {
		t.Error("Clone shares state with the original")
	}
}

func TestStripNonCharacters(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                  "plain",
		"inter\ufffepreter":      "interpreter",
		"a\uffffb\ufdd0c\ufdefd": "abcd",
		"x\U0001fffey\U0010ffff": "xy",
		"keep \ufffd and \u00e9": "keep \ufffd and \u00e9",
	} {
		if got := document.StripNonCharacters(in); got != want {
			t.Errorf("StripNonCharacters(%q) = %q, want %q", in, got, want)
		}
	}
}

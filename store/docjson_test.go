package store

import (
	"reflect"
	"testing"

	"github.com/quarry-rag/quarry/document"
)

// TestDocumentJSON: a document comes back as it went in, integers apart
// from floats, and a damaged value is an error.
func TestDocumentJSON(t *testing.T) {
	d := &document.Document{ID: "a", Content: "text", SourceType: "file", SourceName: "a.md",
		Metadata:   map[string]any{"year": int64(2024), "price": 2.5, "tags": []any{"x"}},
		Provenance: document.Provenance{Source: "a.md", Page: 3}}
	b, err := EncodeDocument(d)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeDocument(b)
	if err != nil || !reflect.DeepEqual(got, d) {
		t.Errorf("round trip: %+v %v", got, err)
	}
	for _, bad := range []string{`{`, `{"id":"a","metadata":[1]}`} {
		if _, err := DecodeDocument([]byte(bad)); err == nil {
			t.Errorf("%s decoded", bad)
		}
	}
}

// TestVectorText: an embedding written as text reads back bit for bit;
// text that is not one is an error.
func TestVectorText(t *testing.T) {
	v := []float32{1, -0.5, 0.99999994, 3.4e38, 1e-45}
	got, err := DecodeVector(EncodeVector(v))
	if err != nil || len(got) != len(v) {
		t.Fatalf("%v, %v", got, err)
	}
	for i := range v {
		if got[i] != v[i] {
			t.Errorf("element %d: %v, want %v", i, got[i], v[i])
		}
	}
	for _, bad := range []string{"!!", "AAA="} {
		if _, err := DecodeVector(bad); err == nil {
			t.Errorf("%q decoded", bad)
		}
	}
}

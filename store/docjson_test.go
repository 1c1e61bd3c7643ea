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

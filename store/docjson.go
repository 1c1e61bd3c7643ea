package store

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/quarry-rag/quarry/document"
)

// docJSON is a document as EncodeDocument writes it.
type docJSON struct {
	ID         string              `json:"id"`
	Content    string              `json:"content"`
	SourceType string              `json:"sourceType"`
	SourceName string              `json:"sourceName"`
	Metadata   json.RawMessage     `json:"metadata"`
	Provenance document.Provenance `json:"provenance"`
}

// EncodeDocument is a document as one JSON value — id, content, source,
// metadata (integers kept apart from floats) and provenance, not its
// embedding or score — for stores that keep the parts of a chunk read
// back but not searched in one text field (Qdrant's payload, Typesense's
// q_doc).
func EncodeDocument(d *document.Document) ([]byte, error) {
	md := []byte("{}")
	if d.Metadata != nil {
		var err error
		if md, err = document.MarshalValue(d.Metadata); err != nil {
			return nil, fmt.Errorf("document %s: metadata: %w", d.ID, err)
		}
	}
	b, err := json.Marshal(docJSON{ID: d.ID, Content: d.Content, SourceType: d.SourceType, SourceName: d.SourceName,
		Metadata: md, Provenance: d.Provenance})
	if err != nil {
		return nil, fmt.Errorf("document %s: %w", d.ID, err)
	}
	return b, nil
}

// DecodeDocument reads what EncodeDocument wrote.
func DecodeDocument(b []byte) (*document.Document, error) {
	var sd docJSON
	if err := json.Unmarshal(b, &sd); err != nil {
		return nil, fmt.Errorf("stored document: %w", err)
	}
	v, err := document.DecodeJSONValue(sd.Metadata)
	if err != nil {
		return nil, fmt.Errorf("document %s: metadata: %w", sd.ID, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("document " + sd.ID + ": stored metadata is not an object")
	}
	return &document.Document{ID: sd.ID, Content: sd.Content, SourceType: sd.SourceType, SourceName: sd.SourceName,
		Metadata: m, Provenance: sd.Provenance}, nil
}

// EncodeVector is an embedding as text: its float32s, little endian, in
// base64. Stores that keep the embedding beside an engine's own copy
// (which a cosine index may give back normalised, a last bit off) return
// the embedding they were given from it.
func EncodeVector(v []float32) string {
	buf := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(buf)
}

// DecodeVector reads an embedding EncodeVector wrote.
func DecodeVector(s string) ([]float32, error) {
	buf, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(buf)%4 != 0 {
		return nil, fmt.Errorf("embedding is not base64 float32s")
	}
	v := make([]float32, len(buf)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:]))
	}
	return v, nil
}

// Package document defines Quarry's unit of retrieval: a Document (one chunk
// once split) with its source identity, JSON-safe metadata, optional
// embedding and score, and the provenance that lets an answer cite it.
//
// It also defines the per-collection Schema that declares typed, filterable
// metadata fields, and the validation every store and ingestion path runs
// before any embedding call or write (SEMANTICS §1–2).
package document

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
)

// Well-known source types. Any non-empty string is a valid source type; these
// are the ones Quarry itself produces.
const (
	SourceManual       = "manual"
	SourceFile         = "file"
	SourceURL          = "url"
	SourceObject       = "object"
	SourceConversation = "conversation"
)

// Provenance records where a chunk came from, so an answer can cite it
// precisely. Zero values mean "unknown": lines and pages count from 1, so 0
// is never a real line or page.
type Provenance struct {
	// Source is the path or URI the text was read from.
	Source string `json:"source,omitempty"`
	// Page is the 1-based page (PDF); 0 when the format has no pages.
	Page int `json:"page,omitempty"`
	// LineStart and LineEnd are the 1-based, inclusive line range in the source.
	LineStart int `json:"lineStart,omitempty"`
	LineEnd   int `json:"lineEnd,omitempty"`
	// HeadingPath lists the headings enclosing the chunk, outermost first.
	HeadingPath []string `json:"headingPath,omitempty"`
	// CharStart and CharEnd are byte offsets [start, end) into the text the
	// splitter was given.
	CharStart int `json:"charStart,omitempty"`
	CharEnd   int `json:"charEnd,omitempty"`
	// ChunkIndex is the 0-based position of the chunk within its source and
	// ChunkCount the number of chunks the source produced (0 when unsplit).
	ChunkIndex int `json:"chunkIndex,omitempty"`
	ChunkCount int `json:"chunkCount,omitempty"`
}

// Document is one retrievable unit of text. The zero value is not ready to
// use: call New, which fills the defaults of SEMANTICS §1.
//
// Metadata values must be JSON-safe (see CheckValue); keys must not be
// reserved (see IsReserved). Score is meaningful only when Scored is true: a
// score of 0 is a real score, distinct from "not scored".
type Document struct {
	ID         string
	Content    string
	SourceType string
	SourceName string
	Metadata   map[string]any
	// Embedding is nil until the document is embedded.
	Embedding []float32
	// Score is set by retrieval (cosine, BM25 or a fused score).
	Score float64
	// Scored reports whether Score holds a score.
	Scored     bool
	Provenance Provenance
}

// New returns a manual document with the given content, a random UUID as its
// id, empty metadata and no embedding or score.
func New(content string) *Document {
	return &Document{
		ID:         uuid.NewString(),
		Content:    content,
		SourceType: SourceManual,
		SourceName: SourceManual,
		Metadata:   map[string]any{},
	}
}

// SetScore records a retrieval score; 0 is a valid score.
func (d *Document) SetScore(s float64) {
	d.Score = s
	d.Scored = true
}

// ClearScore returns the document to the unscored state.
func (d *Document) ClearScore() {
	d.Score = 0
	d.Scored = false
}

// SetEmbedding validates v (SEMANTICS §1: non-empty, finite, non-zero norm)
// and stores it. On error the previous embedding is kept.
func (d *Document) SetEmbedding(v []float32) error {
	if err := CheckVector(v, 0); err != nil {
		return fmt.Errorf("document %s: %w", d.ID, err)
	}
	d.Embedding = v
	return nil
}

// SetMetadata sets one metadata key. Reserved keys, empty keys and values that
// are not JSON-safe are rejected and nothing is written.
func (d *Document) SetMetadata(key string, value any) error {
	return d.AddMetadata(map[string]any{key: value})
}

// AddMetadata merges m into the document's metadata. Every key and value is
// checked first; on error nothing is written.
func (d *Document) AddMetadata(m map[string]any) error {
	for _, k := range sortedKeys(m) {
		if err := checkMetadataKey(d.ID, k); err != nil {
			return err
		}
		if err := CheckValue(m[k]); err != nil {
			return &ValidationError{DocID: d.ID, Field: k, Reason: ReasonNotJSONSafe,
				Msg: fmt.Sprintf("metadata field %q is not JSON-safe: %v", k, err)}
		}
	}
	if d.Metadata == nil {
		d.Metadata = make(map[string]any, len(m))
	}
	for k, v := range m {
		d.Metadata[k] = v
	}
	return nil
}

// Clone returns a deep copy of d, so callers can change metadata, embedding
// or provenance without touching the original.
func (d *Document) Clone() *Document {
	c := *d
	if d.Metadata != nil {
		c.Metadata = make(map[string]any, len(d.Metadata))
		for k, v := range d.Metadata {
			c.Metadata[k] = cloneValue(v)
		}
	}
	if d.Embedding != nil {
		c.Embedding = append([]float32(nil), d.Embedding...)
	}
	if d.Provenance.HeadingPath != nil {
		c.Provenance.HeadingPath = append([]string(nil), d.Provenance.HeadingPath...)
	}
	return &c
}

func cloneValue(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneValue(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = cloneValue(e)
		}
		return out
	case []string:
		return append([]string(nil), x...)
	default:
		return v
	}
}

// Check verifies what every document must satisfy regardless of schema:
// non-empty source type and name, valid UTF-8 content, metadata keys neither
// empty nor reserved, JSON-safe metadata values, and a valid embedding when
// one is present.
func (d *Document) Check() error {
	if d.SourceType == "" {
		return &ValidationError{DocID: d.ID, Field: "sourceType", Reason: ReasonRequired, Msg: "sourceType must not be empty"}
	}
	if d.SourceName == "" {
		return &ValidationError{DocID: d.ID, Field: "sourceName", Reason: ReasonRequired, Msg: "sourceName must not be empty"}
	}
	if !utf8.ValidString(d.Content) {
		return &ValidationError{DocID: d.ID, Field: "content", Reason: ReasonNotJSONSafe, Msg: "content is not valid UTF-8"}
	}
	for _, k := range sortedKeys(d.Metadata) {
		if err := checkMetadataKey(d.ID, k); err != nil {
			return err
		}
		if err := CheckValue(d.Metadata[k]); err != nil {
			return &ValidationError{DocID: d.ID, Field: k, Reason: ReasonNotJSONSafe,
				Msg: fmt.Sprintf("metadata field %q is not JSON-safe: %v", k, err)}
		}
	}
	if d.Embedding != nil {
		if err := CheckVector(d.Embedding, 0); err != nil {
			return fmt.Errorf("document %s: %w", d.ID, err)
		}
	}
	return nil
}

func checkMetadataKey(docID, k string) error {
	if k == "" {
		return &ValidationError{DocID: docID, Field: k, Reason: ReasonEmptyKey, Msg: "metadata keys must not be empty"}
	}
	if IsReserved(k) {
		return &ValidationError{DocID: docID, Field: k, Reason: ReasonReserved,
			Msg: fmt.Sprintf("metadata field %q is reserved by Quarry; rename it", k)}
	}
	return nil
}

// wireDocument is the JSON form of a Document (JSONL files, the HTTP API, MCP).
type wireDocument struct {
	ID         string          `json:"id"`
	Content    string          `json:"content"`
	SourceType string          `json:"sourceType"`
	SourceName string          `json:"sourceName"`
	Metadata   json.RawMessage `json:"metadata"`
	Embedding  []float32       `json:"embedding"`
	Score      *float64        `json:"score"`
	Provenance *Provenance     `json:"provenance,omitempty"`
}

// MarshalJSON writes the document with its metadata, a null embedding when
// not embedded and a null score when not scored.
func (d *Document) MarshalJSON() ([]byte, error) {
	w := wireDocument{
		ID: d.ID, Content: d.Content, SourceType: d.SourceType, SourceName: d.SourceName,
		Metadata: json.RawMessage("{}"), Embedding: d.Embedding,
	}
	if len(d.Metadata) > 0 {
		md, err := MarshalValue(d.Metadata)
		if err != nil {
			return nil, fmt.Errorf("document %s: metadata: %w", d.ID, err)
		}
		w.Metadata = md
	}
	if d.Scored {
		s := d.Score
		w.Score = &s
	}
	if !isZeroProvenance(&d.Provenance) {
		w.Provenance = &d.Provenance
	}
	for _, f := range d.Embedding {
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return nil, fmt.Errorf("document %s: embedding holds a non-finite value", d.ID)
		}
	}
	return json.Marshal(w)
}

func isZeroProvenance(p *Provenance) bool {
	return p.Source == "" && p.Page == 0 && p.LineStart == 0 && p.LineEnd == 0 &&
		len(p.HeadingPath) == 0 && p.CharStart == 0 && p.CharEnd == 0 &&
		p.ChunkIndex == 0 && p.ChunkCount == 0
}

// UnmarshalJSON reads a document. Missing fields take the defaults of New
// except the id, which stays empty so the caller decides (a store assigns a
// UUID, ingestion a chunk id). Numbers in metadata keep their integer-ness
// (2026 is an int64, 2026.0 a float64); embedding components must be numbers.
// Unknown top-level keys are rejected so a typo is not silently dropped.
func (d *Document) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var raw map[string]json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return fmt.Errorf("document: %w", err)
	}
	out := Document{SourceType: SourceManual, SourceName: SourceManual, Metadata: map[string]any{}}
	for k, v := range raw {
		var err error
		switch k {
		case "id":
			err = decodeString(v, &out.ID)
		case "content":
			err = decodeString(v, &out.Content)
		case "sourceType":
			err = decodeString(v, &out.SourceType)
		case "sourceName":
			err = decodeString(v, &out.SourceName)
		case "metadata":
			if string(v) == "null" {
				continue
			}
			var m any
			m, err = DecodeJSONValue(v)
			if err == nil {
				mm, ok := m.(map[string]any)
				if !ok {
					err = fmt.Errorf("metadata must be a JSON object, got %s", TypeName(m))
				} else {
					out.Metadata = mm
				}
			}
		case "embedding":
			out.Embedding, err = decodeEmbedding(v)
		case "score":
			if string(v) == "null" {
				continue
			}
			var n json.Number
			if err = json.Unmarshal(v, &n); err == nil {
				var f float64
				f, err = n.Float64()
				out.SetScore(f)
			}
		case "provenance":
			if string(v) != "null" {
				err = json.Unmarshal(v, &out.Provenance)
			}
		default:
			err = fmt.Errorf("unknown key %q (documents have id, content, sourceType, sourceName, metadata, embedding, score, provenance)", k)
		}
		if err != nil {
			return fmt.Errorf("document field %q: %w", k, err)
		}
	}
	*d = out
	return nil
}

func decodeString(v json.RawMessage, dst *string) error {
	if string(v) == "null" {
		return nil
	}
	if err := json.Unmarshal(v, dst); err != nil {
		return fmt.Errorf("expects a string: %w", err)
	}
	return nil
}

// decodeEmbedding accepts only JSON numbers: encoding/json would turn a null
// into 0 and silently corrupt the vector.
func decodeEmbedding(v json.RawMessage) ([]float32, error) {
	if string(v) == "null" {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(v, &items); err != nil {
		return nil, fmt.Errorf("embedding must be an array of numbers")
	}
	if len(items) == 0 {
		return nil, ErrEmptyVector
	}
	out := make([]float32, len(items))
	for i, it := range items {
		if string(it) == "null" {
			return nil, fmt.Errorf("embedding accepts numeric values only; component %d is null", i)
		}
		var n json.Number
		if err := json.Unmarshal(it, &n); err != nil || len(it) == 0 || it[0] == '"' {
			return nil, fmt.Errorf("embedding accepts numeric values only; component %d is %s", i, string(it))
		}
		f, err := n.Float64()
		if err != nil {
			return nil, fmt.Errorf("embedding component %d: %w", i, err)
		}
		out[i] = float32(f)
	}
	if err := CheckVector(out, 0); err != nil {
		return nil, err
	}
	return out, nil
}

// Locate says where a passage of source sits, as a person would cite it:
// "guide.md · Setup › Install · lines 4-9", "report.pdf · page 3". Every
// surface shows locations in this one format.
func Locate(source string, p Provenance) string {
	loc := source
	switch {
	case p.Page > 0:
		loc += fmt.Sprintf(" · page %d", p.Page)
	case len(p.HeadingPath) > 0:
		loc += " · " + strings.Join(p.HeadingPath, " › ")
	}
	if p.LineStart > 0 {
		loc += fmt.Sprintf(" · lines %d-%d", p.LineStart, p.LineEnd)
	}
	return loc
}

package document_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/internal/conformance"
)

func TestConformance(t *testing.T) {
	cases := conformance.Load(t, "neuron.document_schema", "neuron.document_field", "neuron.document", "neuron.cosine")
	diffs := conformance.LoadDifferences(t, filepath.Join("testdata", "conformance_differences.json"))
	conformance.Run(t, cases, diffs, func(c conformance.Case) []conformance.Result {
		switch c.Area {
		case "neuron.document_schema":
			return schemaCase(c)
		case "neuron.document_field":
			return fieldCase(c)
		case "neuron.document":
			return documentCase(c)
		case "neuron.cosine":
			return cosineCase(c)
		}
		return conformance.Fail("unknown area %s", c.Area)
	})
}

type expected struct {
	Valid   *bool                                       `json:"valid"`
	Matches *bool                                       `json:"matches"`
	Error   *conformance.ExpectedError                  `json:"error"`
	Each    *struct{ Error *conformance.ExpectedError } `json:"each"`
	Raw     map[string]json.RawMessage                  `json:"-"`
}

// expectError checks that err is non-nil and names what the expected
// message names.
func expectError(err error, want *conformance.ExpectedError) error {
	if err == nil {
		return fmt.Errorf("want an error like %q, got none", want.Message)
	}
	return conformance.NamesQuoted(want.Message, err.Error())
}

func schemaFrom(raw json.RawMessage) (*document.Schema, error) {
	return document.ParseSchema(raw)
}

// metadataFrom decodes metadata and maps the cases' PHP placeholders to Go
// values that are not JSON-safe.
func metadataFrom(raw json.RawMessage) (map[string]any, error) {
	v, err := document.DecodeJSONValue(raw)
	if err != nil {
		return nil, err
	}
	m := v.(map[string]any)
	for k, x := range m {
		switch x {
		case "<object>":
			m[k] = struct{ A int }{1}
		case "<json serializable object>":
			m[k] = marshalerObject{}
		case "NaN":
			m[k] = math.NaN()
		case "INF":
			m[k] = math.Inf(1)
		}
		if s, ok := x.(string); ok && strings.Contains(s, `\x`) {
			m[k] = unescapeBytes(s)
		}
	}
	return m, nil
}

// unescapeBytes turns "\xB1"-style escapes into raw (invalid UTF-8) bytes.
func unescapeBytes(s string) string {
	var b []byte
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && s[i+1] == 'x' {
			var v byte
			fmt.Sscanf(s[i+2:i+4], "%02X", &v)
			b = append(b, v)
			i += 3
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}

func schemaCase(c conformance.Case) []conformance.Result {
	var in struct {
		Schema     json.RawMessage `json:"schema"`
		Metadata   json.RawMessage `json:"metadata"`
		DocumentID string          `json:"document_id"`
		Name       *string         `json:"name"`
		Type       string          `json:"type"`
		Value      json.RawMessage `json:"value"`
		Declare    []string        `json:"declare_each"`
		Store      string          `json:"store"`
		Search     *struct {
			Filters json.RawMessage `json:"filters"`
		} `json:"search"`
	}
	var exp expected
	if err := c.Decode(&in, &exp); err != nil {
		return conformance.Of(err)
	}
	switch {
	case in.Declare != nil:
		var out []conformance.Result
		for _, name := range in.Declare {
			_, err := document.NewSchema(document.Field{Name: name, Type: document.TypeString})
			want := *exp.Each.Error
			want.Message = strings.ReplaceAll(want.Message, "{name}", name)
			out = append(out, conformance.Result{Sub: name, Err: expectError(err, &want)})
		}
		return out
	case in.Search != nil:
		s, err := schemaFrom(in.Schema)
		if err != nil {
			return conformance.Of(err)
		}
		e, err := filter.ParseJSON(string(in.Search.Filters))
		if err == nil {
			err = filter.Validate(e, s)
		}
		return conformance.Of(expectError(err, exp.Error))
	case in.Name != nil:
		s, err := schemaFrom(in.Schema)
		if err != nil {
			return conformance.Of(err)
		}
		_, err = s.Filterable(*in.Name)
		return conformance.Of(expectError(err, exp.Error))
	case in.Type != "":
		v, err := document.DecodeJSONValue(in.Value)
		if err != nil {
			return conformance.Of(err)
		}
		if got := document.ValueMatches(document.FieldType(in.Type), v); got != *exp.Matches {
			return conformance.Fail("ValueMatches(%s, %s) = %v", in.Type, in.Value, got)
		}
		return conformance.Pass()
	}
	s, err := schemaFrom(in.Schema)
	if err != nil {
		return conformance.Of(err)
	}
	m, err := metadataFrom(in.Metadata)
	if err != nil {
		return conformance.Of(err)
	}
	d := document.New("text")
	if in.DocumentID != "" {
		d.ID = in.DocumentID
	}
	d.Metadata = m
	err = s.ValidateDocument(d)
	if exp.Error != nil {
		if err := expectError(err, exp.Error); err != nil {
			return conformance.Of(err)
		}
		if in.DocumentID != "" && !strings.Contains(err.Error(), in.DocumentID) {
			return conformance.Fail("message %q does not name document %s", err, in.DocumentID)
		}
		return conformance.Pass()
	}
	return conformance.Of(err)
}

func fieldCase(c conformance.Case) []conformance.Result {
	var in struct {
		Name   *string         `json:"name"`
		Field  *document.Field `json:"field"`
		Call   string          `json:"call"`
		Fields []string        `json:"fields"`
	}
	var exp struct {
		Valid      *bool                      `json:"valid"`
		Filterable *bool                      `json:"filterable"`
		Error      *conformance.ExpectedError `json:"error"`
	}
	if err := c.Decode(&in, &exp); err != nil {
		return conformance.Of(err)
	}
	switch {
	case in.Name != nil:
		err := document.CheckFieldName(*in.Name)
		if exp.Error != nil {
			if err == nil {
				return conformance.Fail("name %q accepted", *in.Name)
			}
			if !strings.Contains(err.Error(), "must start with a letter or underscore and contain letters, numbers, or underscores only") {
				return conformance.Fail("message %q does not state the naming rule", err)
			}
			return conformance.Pass()
		}
		return conformance.Of(err)
	case in.Field != nil:
		f := *in.Field
		f.Filterable = in.Call == "filterable()"
		err := f.Check()
		if exp.Error != nil {
			return conformance.Of(expectError(err, exp.Error))
		}
		if err == nil && f.Filterable != *exp.Filterable {
			return conformance.Fail("filterable = %v", f.Filterable)
		}
		return conformance.Of(err)
	case in.Fields != nil:
		types := map[string]document.FieldType{"strings": document.TypeStringList, "boolean": document.TypeBoolean, "float": document.TypeFloat}
		for _, call := range in.Fields {
			kind, name, _ := strings.Cut(strings.TrimSuffix(call, "')"), "('")
			f := document.Field{Name: name, Type: types[kind], Filterable: true}
			if err := f.Check(); err != nil {
				return conformance.Of(err)
			}
		}
		return conformance.Pass()
	}
	return conformance.Fail("unrecognised input")
}

func documentCase(c conformance.Case) []conformance.Result {
	var in struct {
		New          *string         `json:"new"`
		SetEmbedding json.RawMessage `json:"setEmbedding"`
		SetScore     *float64        `json:"setScore"`
		Previous     []float32       `json:"previous"`
		Reserved     []string        `json:"reserved"`
		SetMetadata  map[string]any  `json:"setMetadata"`
		Before       map[string]any  `json:"before"`
	}
	var exp struct {
		Error          *conformance.ExpectedError `json:"error"`
		Embedding      []float32                  `json:"embedding"`
		Score          *float64                   `json:"score"`
		EmbeddingAfter []float32                  `json:"embedding_after"`
		MetadataAfter  map[string]any             `json:"metadata_after"`
	}
	if err := c.Decode(&in, &exp); err != nil {
		return conformance.Of(err)
	}
	switch {
	case in.New != nil:
		d := document.New(*in.New)
		d2 := document.New(*in.New)
		if d.Content != "" || d.SourceType != "manual" || d.SourceName != "manual" || len(d.Metadata) != 0 ||
			d.Embedding != nil || d.Scored || d.ID == "" || d.ID == d2.ID {
			return conformance.Fail("defaults: %+v", d)
		}
		return conformance.Pass()
	case in.Reserved != nil:
		var out []conformance.Result
		for _, key := range in.Reserved {
			d := document.New("x")
			_ = d.AddMetadata(in.Before)
			md := map[string]any{}
			for k, v := range in.SetMetadata {
				if k == "<reserved>" {
					k = key
				}
				md[k] = v
			}
			err := d.AddMetadata(md)
			want := *exp.Error
			want.Message = strings.ReplaceAll(want.Message, "{field}", key)
			r := expectError(err, &want)
			if r == nil && (len(d.Metadata) != 1 || d.Metadata["tenant"] != "acme") {
				r = fmt.Errorf("partial write: %v", d.Metadata)
			}
			out = append(out, conformance.Result{Sub: key, Err: r})
		}
		// Keys differing only in case are ordinary keys.
		d := document.New("x")
		out = append(out, conformance.Result{Sub: "Content", Err: d.SetMetadata("Content", "ok")})
		return out
	}
	d := document.New("x")
	if in.Previous != nil {
		d.Embedding = in.Previous
	}
	// Embeddings arrive as JSON: decode the way every surface does.
	err := json.Unmarshal([]byte(fmt.Sprintf(`{"id":%q,"embedding":%s}`, d.ID, in.SetEmbedding)), d)
	if exp.Error != nil {
		if err == nil {
			return conformance.Fail("embedding %s accepted", in.SetEmbedding)
		}
		if in.Previous != nil && !equalVec(d.Embedding, exp.EmbeddingAfter) {
			return conformance.Fail("previous embedding lost: %v", d.Embedding)
		}
		if strings.Contains(exp.Error.Message, "empty") && !errors.Is(err, document.ErrEmptyVector) {
			return conformance.Fail("want ErrEmptyVector, got %v", err)
		}
		return conformance.Pass()
	}
	if err != nil {
		return conformance.Of(err)
	}
	if in.SetScore != nil {
		d.SetScore(*in.SetScore)
	}
	if !equalVec(d.Embedding, exp.Embedding) || !d.Scored || d.Score != *exp.Score {
		return conformance.Fail("got embedding %v score %v (scored %v)", d.Embedding, d.Score, d.Scored)
	}
	return conformance.Pass()
}

func equalVec(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func cosineCase(c conformance.Case) []conformance.Result {
	var in struct {
		A        []float32 `json:"a"`
		B        []float32 `json:"b"`
		Distance *float64  `json:"distance"`
	}
	var exp struct {
		Similarity *float64                   `json:"similarity"`
		Distance   *float64                   `json:"distance"`
		Error      *conformance.ExpectedError `json:"error"`
	}
	if err := c.Decode(&in, &exp); err != nil {
		return conformance.Of(err)
	}
	const tol = 1e-6
	if in.Distance != nil {
		if got := document.SimilarityFromDistance(*in.Distance); math.Abs(got-*exp.Similarity) > tol {
			return conformance.Fail("similarity %v", got)
		}
		return conformance.Pass()
	}
	s, err := document.Cosine(in.A, in.B)
	if exp.Error != nil {
		if !errors.Is(err, document.ErrLengthMismatch) {
			return conformance.Fail("want ErrLengthMismatch, got %v", err)
		}
		return conformance.Pass()
	}
	if err != nil {
		return conformance.Of(err)
	}
	d, _ := document.CosineDistance(in.A, in.B)
	if math.Abs(s-*exp.Similarity) > tol || math.Abs(d-*exp.Distance) > tol {
		return conformance.Fail("similarity %v distance %v", s, d)
	}
	return conformance.Pass()
}

// marshalerObject stands for PHP's JsonSerializable: a Go value with its own
// JSON encoding is still not plain JSON data.
type marshalerObject struct{}

func (marshalerObject) MarshalJSON() ([]byte, error) { return []byte(`{}`), nil }

package load

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/internal/jsonorder"
)

// ObjectReader reads JSON objects as documents (SEMANTICS §7): a JSON file
// holding an object or an array of objects, or JSON Lines when Lines is
// set. Each object becomes "key: value" lines of its top-level fields
// (nested values as compact JSON, the @self block skipped); its id, title
// and @self fields become metadata.
//
// A file is read as what it turns out to be, since real trees hold JSON
// files of every shape: JSON Lines named .json is read as JSON Lines, an
// empty file has no text (ErrNoText), and valid JSON that is not objects
// (a list of strings, a number) is read as text. Strict refuses all of
// those instead, for objects a caller sent (ReadObjects).
type ObjectReader struct {
	Lines  bool
	Strict bool
}

// Read implements Reader.
func (r ObjectReader) Read(_ context.Context, f File) ([]*document.Document, error) {
	text, err := DecodeText(f.Data)
	if err != nil {
		return nil, err
	}
	if !r.Strict && strings.TrimSpace(text) == "" {
		return nil, fmt.Errorf("%w: an empty JSON file", ErrNoText)
	}
	var objs []*ordered
	var lines []int
	if r.Lines {
		if objs, lines, err = jsonLines(text); err != nil {
			return nil, err
		}
	} else {
		v, err := decodeOrdered(text)
		if errors.Is(err, jsonorder.ErrTrailing) && !r.Strict {
			// One object after another: JSON Lines under a .json name.
			if objs, lines, lerr := jsonLines(text); lerr == nil {
				return objectDocuments(objs, lines)
			}
		}
		if err != nil {
			return nil, err
		}
		objs, err = objectsOf(v)
		if err != nil {
			if r.Strict {
				return nil, err
			}
			// Valid JSON that is data, not objects: its text is what a
			// person can search.
			d := document.New(document.StripNonCharacters(text))
			d.ID = ""
			return []*document.Document{d}, nil
		}
	}
	return objectDocuments(objs, lines)
}

// jsonLines decodes one object per non-blank line, with the line numbers.
func jsonLines(text string) ([]*ordered, []int, error) {
	var objs []*ordered
	var lines []int
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 1<<16), 1<<26)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		v, err := decodeOrdered(line)
		if err != nil {
			return nil, nil, fmt.Errorf("line %d: %w", n, err)
		}
		o, ok := v.(*ordered)
		if !ok {
			return nil, nil, fmt.Errorf("line %d: expected a JSON object, got %s", n, jsonKind(v))
		}
		objs = append(objs, o)
		lines = append(lines, n)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	return objs, lines, nil
}

// objectsOf is the objects of a JSON value: the object, or the elements of
// an array of objects.
func objectsOf(v any) ([]*ordered, error) {
	switch x := v.(type) {
	case *ordered:
		return []*ordered{x}, nil
	case []any:
		objs := make([]*ordered, 0, len(x))
		for i, e := range x {
			o, ok := e.(*ordered)
			if !ok {
				return nil, fmt.Errorf("element %d: expected a JSON object, got %s", i, jsonKind(e))
			}
			objs = append(objs, o)
		}
		return objs, nil
	}
	return nil, fmt.Errorf("expected a JSON object or an array of objects, got %s", jsonKind(v))
}

// objectDocuments renders objs, with their line numbers when from JSON
// Lines.
func objectDocuments(objs []*ordered, lines []int) ([]*document.Document, error) {
	docs := make([]*document.Document, 0, len(objs))
	for i, o := range objs {
		d, err := objectDocument(o, i)
		if err != nil {
			return nil, fmt.Errorf("object %d: %w", i, err)
		}
		if lines != nil {
			d.Provenance.LineStart, d.Provenance.LineEnd = lines[i], lines[i]
		}
		docs = append(docs, d)
	}
	return docs, nil
}

// objectDocument renders one object (SEMANTICS §7).
func objectDocument(o *ordered, index int) (*document.Document, error) {
	id := ""
	if v, ok := o.Get("id"); ok {
		id = scalarString(v)
	}
	var self *ordered
	if v, ok := o.Get("@self"); ok {
		self, _ = v.(*ordered)
		if id == "" && self != nil {
			if sv, ok := self.Get("id"); ok {
				id = scalarString(sv)
			}
		}
	}
	if id == "" {
		id = strconv.Itoa(index + 1)
	}
	var b strings.Builder
	for i, k := range o.Keys {
		if k == "@self" {
			continue
		}
		b.WriteString(k)
		b.WriteString(": ")
		switch v := o.Vals[i].(type) {
		case string:
			b.WriteString(v)
		default:
			b.Write(compactOrdered(v))
		}
		b.WriteByte('\n')
	}
	d := document.New(document.StripNonCharacters(b.String()))
	d.ID = ""
	md := map[string]any{"object_id": id, "title": objectTitle(o, id)}
	if self != nil {
		for i, k := range self.Keys {
			key := k
			if document.IsReserved(key) || key == "" || md[key] != nil {
				key = "self_" + k
			}
			v, err := document.DecodeJSONValue(compactOrdered(self.Vals[i]))
			if err != nil {
				return nil, err
			}
			md[key] = v
		}
	}
	d.Metadata = md
	d.Provenance.HeadingPath = []string{md["title"].(string)}
	return d, nil
}

// objectTitle picks the citation label: title, name, summary, the first
// short string field, or "Object #id".
func objectTitle(o *ordered, id string) string {
	for _, k := range []string{"title", "name", "summary"} {
		if v, ok := o.Get(k); ok {
			if s, ok := v.(string); ok && strings.TrimSpace(s) != "" {
				return s
			}
		}
	}
	for i, k := range o.Keys {
		if k == "@self" || k == "id" {
			continue
		}
		if s, ok := o.Vals[i].(string); ok && strings.TrimSpace(s) != "" && utf8.RuneCountInString(s) <= 80 {
			return s
		}
	}
	return "Object #" + id
}

func scalarString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil, *ordered, []any:
		return ""
	}
	return string(compactOrdered(v))
}

type ordered = jsonorder.Object

func decodeOrdered(s string) (any, error) {
	v, _, err := jsonorder.Decode(s)
	return v, err
}

func compactOrdered(v any) []byte { return jsonorder.Compact(v, nil) }

func jsonKind(v any) string {
	switch v.(type) {
	case *ordered:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case nil:
		return "null"
	case bool:
		return "a boolean"
	}
	return "a number"
}

// ReadObjects renders JSON data — one object or an array of objects — as
// documents the way ObjectReader reads a .json file: one per object, its
// fields as "key: value" lines, its id, title and @self fields as
// metadata (object_id names it).
func ReadObjects(data []byte) ([]*document.Document, error) {
	return ObjectReader{Strict: true}.Read(context.Background(), File{Path: "objects.json", Kind: KindJSON, Data: data})
}

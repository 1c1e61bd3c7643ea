package load

import (
	"bufio"
	"context"
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
type ObjectReader struct {
	Lines bool
}

// Read implements Reader.
func (r ObjectReader) Read(_ context.Context, f File) ([]*document.Document, error) {
	text, err := DecodeText(f.Data)
	if err != nil {
		return nil, err
	}
	var objs []*ordered
	var lines []int
	if r.Lines {
		sc := bufio.NewScanner(strings.NewReader(text))
		sc.Buffer(make([]byte, 0, 1<<16), 1<<26)
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimSpace(sc.Text())
			if line == "" {
				continue
			}
			v, err := decodeOrdered(line)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			o, ok := v.(*ordered)
			if !ok {
				return nil, fmt.Errorf("line %d: expected a JSON object, got %s", n, jsonKind(v))
			}
			objs = append(objs, o)
			lines = append(lines, n)
		}
		if err := sc.Err(); err != nil {
			return nil, err
		}
	} else {
		v, err := decodeOrdered(text)
		if err != nil {
			return nil, err
		}
		switch x := v.(type) {
		case *ordered:
			objs = []*ordered{x}
		case []any:
			for i, e := range x {
				o, ok := e.(*ordered)
				if !ok {
					return nil, fmt.Errorf("element %d: expected a JSON object, got %s", i, jsonKind(e))
				}
				objs = append(objs, o)
			}
		default:
			return nil, fmt.Errorf("expected a JSON object or an array of objects, got %s", jsonKind(v))
		}
	}
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
	return ObjectReader{}.Read(context.Background(), File{Path: "objects.json", Kind: KindJSON, Data: data})
}

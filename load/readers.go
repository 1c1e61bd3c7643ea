package load

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/internal/jsonorder"
)

// DecodeText turns file bytes into clean text: a UTF-8 byte-order mark is
// dropped and line endings become "\n". Text that is not UTF-8 is an error
// rather than mojibake in the index.
func DecodeText(data []byte) (string, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if !utf8.Valid(data) {
		return "", fmt.Errorf("not UTF-8 text (convert it to UTF-8 first)")
	}
	s := string(data)
	if strings.Contains(s, "\r") {
		s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	}
	return s, nil
}

// TextReader reads plain text, Markdown and source code as one document;
// the splitter cuts it and records lines and headings.
type TextReader struct{}

// Read implements Reader.
func (TextReader) Read(_ context.Context, f File) ([]*document.Document, error) {
	text, err := DecodeText(f.Data)
	if err != nil {
		return nil, err
	}
	d := document.New(text)
	d.ID = ""
	return []*document.Document{d}, nil
}

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
	d := document.New(b.String())
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

// CSVReader reads CSV (and TSV, by extension) with a header row: by default
// one document per row as "column: value" lines; with PerFile the whole
// table as one document.
type CSVReader struct {
	PerFile bool
}

// Read implements Reader.
func (r CSVReader) Read(_ context.Context, f File) ([]*document.Document, error) {
	text, err := DecodeText(f.Data)
	if err != nil {
		return nil, err
	}
	cr := csv.NewReader(strings.NewReader(text))
	if strings.HasSuffix(strings.ToLower(f.Path), ".tsv") {
		cr.Comma = '\t'
	}
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("csv header: %w", err)
	}
	var docs []*document.Document
	var all strings.Builder
	for row := 1; ; row++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("csv: %w", err)
		}
		line, _ := cr.FieldPos(0)
		var b strings.Builder
		for i, v := range rec {
			name := "column " + strconv.Itoa(i+1)
			if i < len(header) && strings.TrimSpace(header[i]) != "" {
				name = header[i]
			}
			if strings.TrimSpace(v) == "" {
				continue
			}
			fmt.Fprintf(&b, "%s: %s\n", name, v)
		}
		if b.Len() == 0 {
			continue
		}
		if r.PerFile {
			all.WriteString(b.String())
			all.WriteByte('\n')
			continue
		}
		d := document.New(b.String())
		d.ID = ""
		d.Metadata = map[string]any{"row": int64(row)}
		d.Provenance.LineStart, d.Provenance.LineEnd = line, line
		docs = append(docs, d)
	}
	if r.PerFile && all.Len() > 0 {
		d := document.New(all.String())
		d.ID = ""
		docs = append(docs, d)
	}
	return docs, nil
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

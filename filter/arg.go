package filter

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/quarry-rag/quarry/document"
)

// ParseArg parses a filter a person typed (a flag, an argument) in any
// syntax and, with a schema, validates it against the schema. An empty
// filter is an error here: a caller with an optional filter tests for ""
// first. A syntax error on one line shows the input with a caret under the
// column where it went wrong.
func ParseArg(src string, schema *document.Schema) (Expr, error) {
	e, err := Parse(src)
	if err != nil {
		var se *SyntaxError
		if !errors.As(err, &se) || se.Column == 0 || strings.ContainsAny(src, "\n\t") {
			return nil, err
		}
		return nil, fmt.Errorf("%w\n  %s\n  %s^", err, src, strings.Repeat(" ", se.Column-1))
	}
	if e == nil {
		return nil, &Error{Msg: "the filter is empty"}
	}
	if schema != nil {
		if err := Validate(e, schema); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// MatchJSONL reads JSON documents, one per line ({"id","content",
// "sourceType","sourceName","metadata"}), and calls fn with the id of each
// that matches. With a schema every document is validated against it too.
// A malformed line stops the read with an error naming its line.
func (m *Matcher) MatchJSONL(in io.Reader, schema *document.Schema, fn func(id string) error) error {
	r := bufio.NewReaderSize(in, 1<<16)
	for line := 1; ; line++ {
		b, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(b)) > 0 {
			var d document.Document
			if uerr := d.UnmarshalJSON(b); uerr != nil {
				return fmt.Errorf("line %d: %w", line, uerr)
			}
			if d.ID == "" {
				return fmt.Errorf("line %d: document has no \"id\"", line)
			}
			if verr := schema.ValidateDocument(&d); verr != nil {
				return fmt.Errorf("line %d: %w", line, verr)
			}
			if m.MatchDocument(&d) {
				if ferr := fn(d.ID); ferr != nil {
					return ferr
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
	}
}

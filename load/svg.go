package load

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/quarry-rag/quarry/document"
)

// SVGReader reads an SVG image for what a person reads in it: its
// <title>, <desc> and <text> elements, a line each. Path data and styles
// are drawing instructions, not text; an SVG with none of these elements
// is an image and is skipped (ErrSkipped).
type SVGReader struct{}

// Read implements Reader.
func (SVGReader) Read(_ context.Context, f File) ([]*document.Document, error) {
	dec := xml.NewDecoder(bytes.NewReader(f.Data))
	dec.Strict = false
	dec.Entity = xml.HTMLEntity
	var lines []string
	var cur strings.Builder
	depth := 0 // inside a title, desc or text element
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if len(lines) > 0 {
				break // keep what was read before the damage
			}
			return nil, fmt.Errorf("svg: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "title", "desc", "text":
				depth++
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "title", "desc", "text":
				depth--
				if depth == 0 {
					if line := collapse(cur.String()); line != "" {
						lines = append(lines, line)
					}
					cur.Reset()
				}
			case "tspan":
				cur.WriteByte(' ')
			}
		case xml.CharData:
			if depth > 0 {
				cur.Write(t)
			}
		}
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("%w: an SVG image with no title, description or text", ErrSkipped)
	}
	d := document.New(document.StripNonCharacters(strings.Join(lines, "\n")))
	d.ID = ""
	return []*document.Document{d}, nil
}

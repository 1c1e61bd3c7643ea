package load

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/quarry-rag/quarry/document"
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
// the splitter cuts it and records lines and headings. Markdown loses its
// HTML comments and link reference definitions (stripMarkdownMarkup).
type TextReader struct{}

// Read implements Reader.
func (TextReader) Read(_ context.Context, f File) ([]*document.Document, error) {
	text, err := DecodeText(f.Data)
	if err != nil {
		return nil, err
	}
	if f.Kind == KindMarkdown {
		text = stripMarkdownMarkup(text)
	}
	d := document.New(document.StripNonCharacters(text))
	d.ID = ""
	return []*document.Document{d}, nil
}

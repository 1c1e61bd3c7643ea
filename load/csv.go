package load

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/quarry-rag/quarry/document"
)

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
		d := document.New(document.StripNonCharacters(b.String()))
		d.ID = ""
		d.Metadata = map[string]any{"row": int64(row)}
		d.Provenance.LineStart, d.Provenance.LineEnd = line, line
		docs = append(docs, d)
	}
	if r.PerFile && all.Len() > 0 {
		d := document.New(document.StripNonCharacters(all.String()))
		d.ID = ""
		docs = append(docs, d)
	}
	return docs, nil
}

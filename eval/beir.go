package eval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Doc is one corpus document.
type Doc struct {
	ID    string `json:"_id"`
	Title string `json:"title"`
	Text  string `json:"text"`
}

// Query is one test query.
type Query struct {
	ID   string `json:"_id"`
	Text string `json:"text"`
}

// Qrels are relevance judgements: query id → document id → gain. A gain of
// 0 or less is a judged non-relevant document.
type Qrels map[string]map[string]int

// Dataset is a BEIR-layout test collection.
type Dataset struct {
	Corpus  []Doc
	Queries []Query
	Qrels   Qrels
}

// maxLine bounds one JSONL record; BEIR's largest documents are well below.
const maxLine = 64 << 20

// LoadBEIR reads dir/corpus.jsonl, dir/queries.jsonl and
// dir/qrels/test.tsv.
func LoadBEIR(dir string) (*Dataset, error) {
	var ds Dataset
	var err error
	if ds.Corpus, err = readFile(filepath.Join(dir, "corpus.jsonl"), ReadCorpus); err != nil {
		return nil, err
	}
	if ds.Queries, err = readFile(filepath.Join(dir, "queries.jsonl"), ReadQueries); err != nil {
		return nil, err
	}
	if ds.Qrels, err = readFile(filepath.Join(dir, "qrels", "test.tsv"), ReadQrels); err != nil {
		return nil, err
	}
	return &ds, nil
}

func readFile[T any](path string, read func(io.Reader) (T, error)) (T, error) {
	f, err := os.Open(path)
	if err != nil {
		var zero T
		return zero, fmt.Errorf("eval: %w", err)
	}
	defer f.Close()
	v, err := read(f)
	if err != nil {
		return v, fmt.Errorf("eval: %s: %w", path, err)
	}
	return v, nil
}

// ReadCorpus reads BEIR corpus JSONL: one {"_id","title","text"} object a
// line. Numeric ids are accepted and kept as their decimal text.
func ReadCorpus(r io.Reader) ([]Doc, error) {
	var docs []Doc
	err := eachLine(r, func(n int, line []byte) error {
		var rec struct {
			ID    flexID `json:"_id"`
			Title string `json:"title"`
			Text  string `json:"text"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		if rec.ID == "" {
			return fmt.Errorf("line %d: missing _id", n)
		}
		docs = append(docs, Doc{ID: string(rec.ID), Title: rec.Title, Text: rec.Text})
		return nil
	})
	return docs, err
}

// ReadQueries reads BEIR queries JSONL: one {"_id","text"} object a line.
func ReadQueries(r io.Reader) ([]Query, error) {
	var qs []Query
	err := eachLine(r, func(n int, line []byte) error {
		var rec struct {
			ID   flexID `json:"_id"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		if rec.ID == "" {
			return fmt.Errorf("line %d: missing _id", n)
		}
		qs = append(qs, Query{ID: string(rec.ID), Text: rec.Text})
		return nil
	})
	return qs, err
}

// ReadQrels reads BEIR qrels: "query-id<TAB>corpus-id<TAB>score" lines after
// an optional header. TREC's four-column form ("qid 0 docid rel",
// whitespace-separated) is accepted too. A repeated pair keeps the last
// grade.
func ReadQrels(r io.Reader) (Qrels, error) {
	q := Qrels{}
	err := eachLine(r, func(n int, line []byte) error {
		f := strings.Fields(string(line))
		if len(f) == 4 {
			f = []string{f[0], f[2], f[3]}
		}
		if len(f) != 3 {
			return fmt.Errorf("line %d: want query-id, corpus-id and score, got %d fields", n, len(f))
		}
		gain, err := strconv.Atoi(f[2])
		if err != nil {
			if n == 1 {
				return nil // header
			}
			return fmt.Errorf("line %d: score %q is not an integer", n, f[2])
		}
		if q[f[0]] == nil {
			q[f[0]] = map[string]int{}
		}
		q[f[0]][f[1]] = gain
		return nil
	})
	return q, err
}

// WriteCorpus writes docs as BEIR corpus JSONL.
func WriteCorpus(w io.Writer, docs []Doc) error {
	return writeJSONL(w, docs)
}

// WriteQueries writes qs as BEIR queries JSONL.
func WriteQueries(w io.Writer, qs []Query) error {
	return writeJSONL(w, qs)
}

func writeJSONL[T any](w io.Writer, recs []T) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for i := range recs {
		if err := enc.Encode(&recs[i]); err != nil {
			return fmt.Errorf("eval: write record %d: %w", i+1, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("eval: write: %w", err)
	}
	return nil
}

// eachLine calls f with every non-blank line, numbered from 1.
func eachLine(r io.Reader, f func(n int, line []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), maxLine)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if err := f(n, line); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("line %d longer than %d bytes", n+1, maxLine)
		}
		return err
	}
	return nil
}

// flexID accepts a JSON string or number as an id.
type flexID string

// UnmarshalJSON implements json.Unmarshaler.
func (id *flexID) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*id = flexID(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("_id must be a string or a number: %w", err)
	}
	*id = flexID(n.String())
	return nil
}

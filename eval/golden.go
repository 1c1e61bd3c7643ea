package eval

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Golden is one case of a golden set: a question, the answer a careful
// person would give, and the sources that hold it. In JSONL, one object a
// line:
//
//	{"id": "q1", "question": "…", "reference": "…", "sources": ["docs/search.md"],
//	 "answers": ["the sentence of docs/search.md that answers it"]}
//	{"id": "q2", "question": "…", "unanswerable": true}
//
// "answer", "reference_answer", "expected_answer" and "expected_output" are
// read as reference; "relevant_sources" as sources; "input" as question.
type Golden struct {
	ID        string   `json:"id"`
	Question  string   `json:"question"`
	Reference string   `json:"reference"`
	Sources   []string `json:"sources"`
	// Answers are the sentences of the sources that answer the question,
	// as written there: what an extractive answer should quote.
	Answers []string `json:"answers,omitempty"`
	// Unanswerable marks a question the corpus does not answer: the
	// answer should abstain.
	Unanswerable bool `json:"unanswerable,omitempty"`
}

// UnmarshalJSON accepts the field names golden sets are written with.
func (g *Golden) UnmarshalJSON(b []byte) error {
	var v struct {
		ID              flexID   `json:"id"`
		Question        string   `json:"question"`
		Input           string   `json:"input"`
		Reference       string   `json:"reference"`
		Answer          string   `json:"answer"`
		ReferenceAnswer string   `json:"reference_answer"`
		ExpectedAnswer  string   `json:"expected_answer"`
		ExpectedOutput  string   `json:"expected_output"`
		Sources         []string `json:"sources"`
		RelevantSources []string `json:"relevant_sources"`
		Answers         []string `json:"answers"`
		Unanswerable    bool     `json:"unanswerable"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*g = Golden{ID: string(v.ID), Question: first(v.Question, v.Input),
		Reference: first(v.Reference, v.ReferenceAnswer, v.Answer, v.ExpectedAnswer, v.ExpectedOutput),
		Sources:   append(v.Sources, v.RelevantSources...), Answers: v.Answers, Unanswerable: v.Unanswerable}
	return nil
}

func first(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// ReadGolden reads a golden set in JSONL. Every case needs a question;
// cases without an id are numbered from 1 by line; ids must be unique.
func ReadGolden(r io.Reader) ([]Golden, error) {
	var out []Golden
	seen := map[string]bool{}
	err := eachLine(r, func(n int, line []byte) error {
		var g Golden
		if err := json.Unmarshal(line, &g); err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		g.Question = strings.TrimSpace(g.Question)
		if g.Question == "" {
			return fmt.Errorf("line %d: the case has no question", n)
		}
		if g.ID == "" {
			g.ID = fmt.Sprintf("%d", len(out)+1)
		}
		if g.Unanswerable && (len(g.Sources) > 0 || len(g.Answers) > 0 || g.Reference != "") {
			return fmt.Errorf("line %d: an unanswerable case has no sources, answers or reference", n)
		}
		if seen[g.ID] {
			return fmt.Errorf("line %d: id %q repeats an earlier case", n, g.ID)
		}
		seen[g.ID] = true
		out = append(out, g)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("golden set: %w", err)
	}
	if len(out) == 0 {
		return nil, errors.New("golden set: no cases")
	}
	return out, nil
}

// LoadGolden reads a golden set file.
func LoadGolden(path string) ([]Golden, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	gs, err := ReadGolden(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return gs, nil
}

package eval_test

import (
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/eval"
)

// FuzzParseScore: a judge's reply never panics the parser, and an accepted
// score lies in [0, 1].
func FuzzParseScore(f *testing.F) {
	for _, s := range []string{`{"score": 0.9, "reason": "..."}`, "```json\n{\"score\":1}\n```", `{"score":"x"}`, `}{`, `{"score":1e400}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, reply string) {
		s, err := eval.ParseScore(reply)
		if err == nil && (s.Score < 0 || s.Score > 1) {
			t.Errorf("accepted score %v", s.Score)
		}
		for _, st := range eval.Statements(reply) {
			if strings.TrimSpace(st) == "" {
				t.Error("an empty statement")
			}
		}
	})
}

package quarry_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/quarry-rag/quarry"
)

func TestPassageSnippet(t *testing.T) {
	mark := func(w string) string { return "[" + w + "]" }
	long := strings.Repeat("filler words here ", 20) + "Refunds take five business days." + strings.Repeat(" more filler", 20)
	for _, tc := range []struct {
		name, text, query string
		want              []string
		not               []string
	}{
		{"short", "Refunds take  five\ndays.", "how long do refunds take", []string{"[Refunds] [take] five days."}, []string{"…"}},
		{"window moves to the hit", long, "refunds", []string{"…", "[Refunds] take five"}, nil},
		{"stop words stay plain", "The refund is the rule.", "the refund", []string{"The [refund] is the rule."}, nil},
		{"no hit keeps the start", "Alpha beta gamma.", "zeta", []string{"Alpha beta gamma."}, []string{"["}},
		{"multibyte cut", strings.Repeat("é", 300), "x", []string{"…"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := quarry.Passage{Text: tc.text}.Snippet(tc.query, 240, mark)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("snippet %q lacks %q", got, w)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(got, w) {
					t.Errorf("snippet %q holds %q", got, w)
				}
			}
			if !utf8.ValidString(got) {
				t.Errorf("snippet %q is not valid UTF-8", got)
			}
		})
	}
}

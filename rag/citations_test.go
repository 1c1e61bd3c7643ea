package rag

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func validUpTo(n int) func(int) bool { return func(k int) bool { return k >= 1 && k <= n } }

func TestCleanMarkers(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		cited    []int
	}{
		{"Refunds take five days [1].", "Refunds take five days [1].", []int{1}},
		{"Refunds take five days [9].", "Refunds take five days.", nil},
		{"A [2] and B [1][3], C [4].", "A [2] and B [1][3], C.", []int{1, 2, 3}},
		{"Both [1, 9] and [ 2 ,3 ].", "Both [1] and [2, 3].", []int{1, 2, 3}},
		{"Zero [0] is no passage.", "Zero is no passage.", nil},
		{"Not markers: [a], [1a], [], [1,,2], [12345].", "Not markers: [a], [1a], [], [1,,2], [12345].", nil},
		{"Code `a[9]` and ```x[9]``` stay [1].", "Code `a[9]` and ```x[9]``` stay [1].", []int{1}},
		{"```\nb = a[9]\n```\nOutside [9] [2].\n", "```\nb = a[9]\n```\nOutside [2].\n", []int{2}},
		{"Unclosed `code [9]\nnext line [9] [3]", "Unclosed `code [9]\nnext line [3]", []int{3}},
		{"Line one [7]\nLine two [1]", "Line one\nLine two [1]", []int{1}},
		{"[9] starts the answer.", " starts the answer.", nil},
		{"Tabs\t[9]\tstay after.", "Tabs\tstay after.", nil},
	} {
		got, cited := cleanMarkers(tc.in, validUpTo(3))
		if got != tc.want || !slices.Equal(cited, tc.cited) {
			t.Errorf("%q:\n got %q %v\nwant %q %v", tc.in, got, cited, tc.want, tc.cited)
		}
	}
}

// TestCiteStreamMatchesWhole splits replies at every point and at random:
// the cleaned stream must always equal the whole reply cleaned.
func TestCiteStreamMatchesWhole(t *testing.T) {
	replies := []string{
		"Refunds take five days [1]. Gift cards are never refunded [9]; shipping is free [2, 7].",
		"See [1][2][3][4] and  [10] then `x [9]` and ``y`` [8] end [3]",
		"```go\nv := a[9]\n```\nThe loop [2] ends.  [9]\n  ```\nraw [9]\n  ```\nDone [1].",
		"Brackets [ that never close and [12 more text] [3",
		"Trailing blanks   \t",
		"Ends with a marker [9]",
		"`` ` `` and ` [9] ` then [9].",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, reply := range replies {
		want, _ := cleanMarkers(reply, validUpTo(3))
		check := func(parts []string) {
			t.Helper()
			cs := &citeStream{valid: validUpTo(3)}
			var got strings.Builder
			for _, p := range parts {
				got.WriteString(cs.add(p))
			}
			got.WriteString(cs.finish())
			if got.String() != want {
				t.Errorf("%q split as %q:\n got %q\nwant %q", reply, parts, got.String(), want)
			}
		}
		for i := 0; i <= len(reply); i++ {
			check([]string{reply[:i], reply[i:]})
		}
		chars := strings.Split(reply, "")
		check(chars)
		for range 50 {
			var parts []string
			rest := reply
			for rest != "" {
				n := min(len(rest), 1+rng.IntN(6))
				parts = append(parts, rest[:n])
				rest = rest[n:]
			}
			check(parts)
		}
	}
}

func TestCiteStreamHoldsOnlyWhatMayChange(t *testing.T) {
	cs := &citeStream{valid: validUpTo(2)}
	if got := cs.add("It works [1"); got != "It works" {
		t.Errorf("held too much or too little: %q", got)
	}
	if got := cs.add("] well"); got != " [1] well" {
		t.Errorf("after the marker closed: %q", got)
	}
	if got := cs.add(" [9"); got != "" {
		t.Errorf("a possible marker leaked: %q", got)
	}
	if got := cs.add("]."); got != "." {
		t.Errorf("an invalid marker was not dropped: %q", got)
	}
}

func TestCleanJSON(t *testing.T) {
	raw, cited, err := cleanJSON("```json\n{\"answer\":\"Five days [1] [8].\",\"points\":[\"gift cards [2]\",3],\"ok\":true}\n```", validUpTo(2))
	if err != nil || string(raw) != `{"answer":"Five days [1].","points":["gift cards [2]",3],"ok":true}` || !slices.Equal(cited, []int{1, 2}) {
		t.Errorf("%s %v %v", raw, cited, err)
	}
	if _, _, err := cleanJSON("Sure! Here it is.", validUpTo(2)); err == nil {
		t.Error("prose accepted as JSON")
	}
}

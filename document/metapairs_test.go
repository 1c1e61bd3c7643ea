package document_test

import (
	"reflect"
	"testing"

	"github.com/quarry-rag/quarry/document"
)

func TestParseMetaPairs(t *testing.T) {
	for _, tc := range []struct {
		pairs []string
		want  map[string]any
		err   bool
	}{
		{[]string{"team=support", "year=2026", "weight=0.5", "draft=true", "note=a=b"},
			map[string]any{"team": "support", "year": int64(2026), "weight": 0.5, "draft": true, "note": "a=b"}, false},
		{[]string{`tags=["a"]`}, map[string]any{"tags": `["a"]`}, false},
		{[]string{"noequals"}, nil, true},
		{[]string{"=v"}, nil, true},
		{nil, map[string]any{}, false},
	} {
		got, err := document.ParseMetaPairs(tc.pairs)
		if (err != nil) != tc.err || (!tc.err && !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("ParseMetaPairs(%q) = %v, %v; want %v (error %v)", tc.pairs, got, err, tc.want, tc.err)
		}
	}
}

func TestParseMetaPairsNamesTheReservedField(t *testing.T) {
	_, err := document.ParseMetaPairs([]string{"score=1"})
	if err == nil || err.Error() != `metadata "score=1": document: metadata field "score" is reserved by Quarry; rename it` {
		t.Errorf("a reserved field: %v", err)
	}
}

package filter_test

import (
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
)

func TestParseArg(t *testing.T) {
	schema, err := document.ParseSchema([]byte(`{"fields":[{"name":"year","type":"integer","filterable":true}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		src    string
		schema *document.Schema
		want   string // in the error; "" for none
	}{
		{"year >= 2025", schema, ""},
		{"year = '2025'", schema, "integer"},
		{"year >= 2025 and", nil, "\n  year >= 2025 and\n                  ^"},
		{"", nil, "empty"},
		{"  ", nil, "empty"},
	} {
		_, err := filter.ParseArg(tc.src, tc.schema)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.src, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: error %v, want one saying %q", tc.src, err, tc.want)
		}
	}
}

func TestMatchJSONL(t *testing.T) {
	m, err := filter.NewMatcher(filter.Gte("year", 2025))
	if err != nil {
		t.Fatal(err)
	}
	in := `{"id":"a","metadata":{"year":2026}}

{"id":"b","metadata":{"year":2020}}
{"id":"c","metadata":{"year":2025}}`
	var got []string
	if err := m.MatchJSONL(strings.NewReader(in), nil, func(id string) error { got = append(got, id); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "a,c" {
		t.Errorf("matched %v, want a,c", got)
	}
	err = m.MatchJSONL(strings.NewReader("{\"id\":\"a\"}\n{\"metadata\":{}}\n"), nil, func(string) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a document without id: %v, want an error naming line 2", err)
	}
}

package where

import (
	"encoding/json"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
)

func TestCompile(t *testing.T) {
	schema := &document.Schema{Fields: []document.Field{
		{Name: "year", Type: document.TypeInteger, Filterable: true},
		{Name: "tags", Type: document.TypeStringList, Filterable: true},
	}}
	s := &Syntax{Dialect: "d", SourceType: "q_stype", SourceName: "q_sname",
		Field: func(n string) string { return "m_" + n }, Present: Exists, Holds: InOne,
		Raw: func(b []byte) (any, error) { return json.RawMessage(b), nil }}
	for _, tc := range []struct {
		name string
		f    filter.Expr
		want string
		fold filter.Fold
	}{
		{"none", nil, "null", filter.Always},
		{"builtin eq", filter.Eq("sourceType", "file"), `{"q_stype":{"$eq":"file"}}`, filter.Depends},
		{"builtin neq needs no presence", filter.Neq("sourceName", "a.md"), `{"q_sname":{"$ne":"a.md"}}`, filter.Depends},
		{"neq needs presence", filter.Neq("year", 2020), `{"$and":[{"m_year":{"$exists":true}},{"m_year":{"$ne":2020}}]}`, filter.Depends},
		{"in", filter.In("year", 2020, 2021), `{"m_year":{"$in":[2020,2021]}}`, filter.Depends},
		{"wrong type never equal", filter.Eq("year", "x"), "null", filter.Never},
		{"range", filter.Gte("year", 2020), `{"m_year":{"$gte":2020}}`, filter.Depends},
		{"contains all", filter.ContainsAll("tags", "a", "b"), `{"$and":[{"m_tags":{"$in":["a"]}},{"m_tags":{"$in":["b"]}}]}`, filter.Depends},
		{"list never equals", filter.Eq("tags", "a"), "null", filter.Never},
		{"or", filter.Or(filter.Eq("year", 2020), filter.Eq("sourceType", "file")), `{"$or":[{"m_year":{"$eq":2020}},{"q_stype":{"$eq":"file"}}]}`, filter.Depends},
		{"raw", filter.NewRaw("d", json.RawMessage(`{"x":1}`)), `{"x":1}`, filter.Depends},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, fold, err := s.Compile(tc.f, schema)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(w)
			if string(got) != tc.want || fold != tc.fold {
				t.Errorf("got %s (fold %v), want %s (fold %v)", got, fold, tc.want, tc.fold)
			}
		})
	}
	if _, _, err := s.Compile(filter.NewRaw("other", json.RawMessage(`{}`)), schema); err == nil {
		t.Error("a raw fragment of another store compiled")
	}
}

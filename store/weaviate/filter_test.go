package weaviate

import (
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
)

func testSchema(t *testing.T) *document.Schema {
	s, err := document.NewSchema(
		document.Field{Name: "year", Type: document.TypeInteger, Filterable: true},
		document.Field{Name: "price", Type: document.TypeFloat, Filterable: true},
		document.Field{Name: "lang", Type: document.TypeString, Filterable: true},
		document.Field{Name: "tags", Type: document.TypeStringList, Filterable: true},
	)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCompileFilter: each portable operator becomes the where filter with
// the same meaning; what cannot match folds to a constant and sends no
// query.
func TestCompileFilter(t *testing.T) {
	schema := testSchema(t)
	tests := []struct {
		name string
		f    filter.Expr
		want string // GraphQL, or "always"/"never"
	}{
		{"eq string", filter.Eq("lang", "en"), `{operator:Equal,path:["m_lang"],valueText:"\u001een\u001e"}`},
		{"eq int", filter.Eq("year", 2024), `{operator:Equal,path:["m_year"],valueInt:2024}`},
		{"eq int with an integral float", filter.Eq("year", 2024.0), `{operator:Equal,path:["m_year"],valueInt:2024}`},
		{"eq int with a fraction", filter.Eq("year", 2024.5), "never"},
		{"eq float with an int", filter.Eq("price", 3), `{operator:Equal,path:["m_price"],valueNumber:3.0}`},
		{"eq of another type", filter.Eq("lang", 3), "never"},
		{"eq on a list", filter.Eq("tags", "a"), "never"},
		{"neq needs the field", filter.Neq("lang", "en"),
			`{operands:[{operator:IsNull,path:["m_lang"],valueBoolean:false},{operands:[{operator:Equal,path:["m_lang"],valueText:"\u001een\u001e"}],operator:Not}],operator:And}`},
		{"neq of another type is presence", filter.Neq("lang", 3), `{operator:IsNull,path:["m_lang"],valueBoolean:false}`},
		{"neq on a list is presence", filter.Neq("tags", "a"), `{operator:IsNull,path:["m_tags"],valueBoolean:false}`},
		{"in", filter.In("year", 2020, "x", 2021),
			`{operands:[{operator:Equal,path:["m_year"],valueInt:2020},{operator:Equal,path:["m_year"],valueInt:2021}],operator:Or}`},
		{"in nothing of the type", filter.In("year", "x"), "never"},
		{"gt int, fractional bound", filter.Gt("year", 2020.5), `{operator:GreaterThan,path:["m_year"],valueInt:2020}`},
		{"gte int, fractional bound", filter.Gte("year", 2020.5), `{operator:GreaterThanEqual,path:["m_year"],valueInt:2021}`},
		{"lt int, fractional bound", filter.Lt("year", 2020.5), `{operator:LessThan,path:["m_year"],valueInt:2021}`},
		{"lte int, fractional bound", filter.Lte("year", 2020.5), `{operator:LessThanEqual,path:["m_year"],valueInt:2020}`},
		{"lt int, bound past int64", filter.Lt("year", 1e19), `{operator:IsNull,path:["m_year"],valueBoolean:false}`},
		{"range on a string", filter.Gt("lang", 3), "never"},
		{"contains_any", filter.ContainsAny("tags", "a", "b"), `{operator:ContainsAny,path:["m_tags"],valueText:["\u001ea\u001e","\u001eb\u001e"]}`},
		{"contains on a scalar", filter.ContainsAll("lang", "a"), "never"},
		{"source name", filter.Eq("sourceName", " a.md "), `{operator:Equal,path:["q_sname"],valueText:"\u001e a.md \u001e"}`},
		{"and folds a never", filter.And(filter.Eq("lang", "en"), filter.Eq("year", 1.5)), "never"},
		{"or drops a never", filter.Or(filter.Eq("lang", "en"), filter.Eq("year", 1.5)), `{operator:Equal,path:["m_lang"],valueText:"\u001een\u001e"}`},
		{"raw", filter.NewRaw(Dialect, map[string]any{"path": []any{"m_year"}, "operator": "GreaterThan", "valueInt": 2020}),
			`{operator:GreaterThan,path:["m_year"],valueInt:2020}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := compileFilter(tt.f, schema)
			if err != nil {
				t.Fatal(err)
			}
			got := map[truth]string{always: "always", never: "never"}[c.t]
			if c.t == unknown {
				if got, err = gqlValue(c.w); err != nil {
					t.Fatal(err)
				}
			}
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestRawFragmentsStayValues: a raw fragment is turned into GraphQL value
// by value; a member name or operator that is not a name is refused, and
// no string can close its literal.
func TestRawFragmentsStayValues(t *testing.T) {
	schema := testSchema(t)
	for _, frag := range []any{
		map[string]any{"path": []any{"m_year"}, "operator": "Equal) { x } #", "valueInt": 1},
		map[string]any{"path": []any{"m_year"}, "valueInt: 1}) {": 1},
		"not an object",
	} {
		if _, err := compileFilter(filter.NewRaw(Dialect, frag), schema); err == nil {
			t.Errorf("fragment %v accepted", frag)
		}
	}
	c, err := compileFilter(filter.NewRaw(Dialect, map[string]any{"path": []any{"m_lang"}, "operator": "Equal", "valueText": `"}){x}`}), schema)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := gqlValue(c.w)
	if !strings.Contains(s, `valueText:"\"}){x}"`) {
		t.Errorf("string not escaped: %s", s)
	}
	if _, err := compileFilter(filter.NewRaw("postgres", `"x = 1"`), schema); err == nil {
		t.Error("a fragment for another store was accepted")
	}
}

// TestClassNames: distinct collection names are distinct classes.
func TestClassNames(t *testing.T) {
	b := &Backend{opts: Options{Prefix: "Quarry"}}
	seen := map[string]string{}
	for _, name := range []string{"a_b", "a-b", "a__b", "a_0b", "a-_b", "ab"} {
		c := b.className(name)
		if other, dup := seen[c]; dup {
			t.Errorf("%q and %q share class %s", name, other, c)
		}
		seen[c] = name
	}
}

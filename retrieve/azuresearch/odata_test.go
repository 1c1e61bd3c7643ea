package azuresearch

import (
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
)

// TestCompile: each portable operator becomes the OData expression with
// the same meaning; what cannot match folds to a constant and sends no
// request.
func TestCompile(t *testing.T) {
	ix := &Index{SourceField: "url", Fields: []document.Field{
		{Name: "tenant", Type: document.TypeString}, {Name: "year", Type: document.TypeInteger},
		{Name: "price", Type: document.TypeFloat}, {Name: "draft", Type: document.TypeBoolean},
		{Name: "tags", Type: document.TypeStringList}}}
	tests := []struct {
		name string
		f    filter.Expr
		want string // OData, or "always"/"never"
	}{
		{"none", nil, "always"},
		{"eq string, quote doubled", filter.Eq("tenant", "o'hara"), "tenant eq 'o''hara'"},
		{"eq int", filter.Eq("year", 2024), "year eq 2024"},
		{"eq int with an integral float", filter.Eq("year", 2024.0), "year eq 2024"},
		{"eq int with a fraction", filter.Eq("year", 2024.5), "never"},
		{"eq float with an int", filter.Eq("price", 3), "price eq 3.0"},
		{"eq bool", filter.Eq("draft", false), "draft eq false"},
		{"eq of another type", filter.Eq("tenant", 3), "never"},
		{"neq needs the field", filter.Neq("tenant", "acme"), "(tenant ne null and tenant ne 'acme')"},
		{"neq of another type is presence", filter.Neq("tenant", 3), "tenant ne null"},
		{"in", filter.In("year", 2020, "x", 2021), "(year eq 2020 or year eq 2021)"},
		{"gt, fractional bound", filter.Gt("year", 2020.5), "year gt 2020"},
		{"gte, fractional bound", filter.Gte("year", 2020.5), "year ge 2021"},
		{"lt float", filter.Lt("price", 9.99), "price lt 9.99"},
		{"range on a string", filter.Gt("tenant", 3), "never"},
		{"contains_any", filter.ContainsAny("tags", "a", "b"), "tags/any(t: t eq 'a' or t eq 'b')"},
		{"contains_all", filter.ContainsAll("tags", "a", "b"), "(tags/any(t: t eq 'a') and tags/any(t: t eq 'b'))"},
		{"contains on a scalar", filter.ContainsAny("tenant", "a"), "never"},
		{"eq on a list", filter.Eq("tags", "a"), "never"},
		{"undeclared field", filter.Eq("team", "x"), "never"},
		{"neq on an undeclared field", filter.Neq("team", "x"), "never"},
		{"source type", filter.Eq("sourceType", SourceType), "always"},
		{"another source type", filter.Eq("sourceType", "file"), "never"},
		{"source name", filter.Eq("sourceName", "https://x/y"), "url eq 'https://x/y'"},
		{"and folds a never", filter.And(filter.Eq("tenant", "a"), filter.Eq("team", "x")), "never"},
		{"and drops an always", filter.And(filter.Eq("tenant", "a"), filter.Eq("sourceType", SourceType)), "tenant eq 'a'"},
		{"or drops a never", filter.Or(filter.Eq("tenant", "a"), filter.Eq("team", "x")), "tenant eq 'a'"},
		{"nested", filter.And(filter.Eq("tenant", "a"), filter.Or(filter.Gte("year", 2025), filter.ContainsAny("tags", "go"))),
			"(tenant eq 'a' and (year ge 2025 or tags/any(t: t eq 'go')))"},
		{"raw", filter.NewRaw(Dialect, "search.ismatch('kettle', 'title')"), "(search.ismatch('kettle', 'title'))"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ix.compile(tt.f)
			if err != nil {
				t.Fatal(err)
			}
			s := got.expr
			switch got.t {
			case filter.Always:
				s = "always"
			case filter.Never:
				s = "never"
			}
			if s != tt.want {
				t.Errorf("got %s, want %s", s, tt.want)
			}
		})
	}
	if _, err := ix.compile(filter.NewRaw("qdrant", map[string]any{"key": "x"})); err == nil {
		t.Error("a raw fragment for another store compiled")
	}
}

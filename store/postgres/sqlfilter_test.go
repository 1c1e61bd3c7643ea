package postgres

import (
	"reflect"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/filter"
)

// TestCompileGolden pins the SQL of each operator. Values appear only in
// the arguments, never in the SQL text.
func TestCompileGolden(t *testing.T) {
	tests := []struct {
		f    string
		sql  string
		args []any
	}{
		{`sourceType = 'file'`, `source_type = $1`, []any{"file"}},
		{`sourceName != 'a.md'`, `source_name <> $1`, []any{"a.md"}},
		{`sourceName in ('a', 'b')`, `source_name = ANY($1::text[])`, []any{[]string{"a", "b"}}},
		{`tenant = 'acme'`, `metadata->'tenant' = $1::text::jsonb`, []any{`"acme"`}},
		{`year = 2024.0`, `metadata->'year' = $1::text::jsonb`, []any{`2024.0`}},
		{`draft = false`, `metadata->'draft' = $1::text::jsonb`, []any{`false`}},
		{`tenant != 'acme'`, `((metadata->'tenant' IS NOT NULL AND jsonb_typeof(metadata->'tenant') <> 'null') AND metadata->'tenant' <> $1::text::jsonb)`, []any{`"acme"`}},
		{`year in (2024, 2025)`, `metadata->'year' = ANY($1::text[]::jsonb[])`, []any{[]string{"2024", "2025"}}},
		{`year >= 2024`, `(jsonb_typeof(metadata->'year') = 'number' AND metadata->'year' >= $1::text::jsonb)`, []any{"2024"}},
		{`price < 9.5`, `(jsonb_typeof(metadata->'price') = 'number' AND metadata->'price' < $1::text::jsonb)`, []any{"9.5"}},
		{`tags contains any ('go', 'rag')`, `(jsonb_typeof(metadata->'tags') = 'array' AND metadata->'tags' ?| $1::text[])`, []any{[]string{"go", "rag"}}},
		{`tags contains all ('go')`, `(jsonb_typeof(metadata->'tags') = 'array' AND metadata->'tags' ?& $1::text[])`, []any{[]string{"go"}}},
		{`a = 1 and (b = 2 or c = 3)`, `(metadata->'a' = $1::text::jsonb AND (metadata->'b' = $2::text::jsonb OR metadata->'c' = $3::text::jsonb))`, []any{"1", "2", "3"}},
	}
	for _, tt := range tests {
		e, err := filter.Parse(tt.f)
		if err != nil {
			t.Fatal(err)
		}
		c, err := compileFilter(e, 0)
		if err != nil {
			t.Errorf("%s: %v", tt.f, err)
			continue
		}
		if c.sql != tt.sql {
			t.Errorf("%s:\n got %s\nwant %s", tt.f, c.sql, tt.sql)
		}
		if !reflect.DeepEqual(c.args, tt.args) {
			t.Errorf("%s: args %#v, want %#v", tt.f, c.args, tt.args)
		}
	}
}

func TestHostileValuesOnlyInArguments(t *testing.T) {
	hostile := []string{`'; DROP TABLE quarry_documents; --`, `$1`, `" OR 1=1 --`, "Città ☃ \u0000x", `\'`, `x?|y$2`}
	for _, h := range hostile {
		e := filter.And(filter.Eq("tenant", h), filter.Neq("sourceName", h), filter.In("lang", h, "x"), filter.ContainsAny("tags", h))
		c, err := compileFilter(e, 2)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(c.sql, h) {
			t.Errorf("value %q reached the SQL text: %s", h, c.sql)
		}
		if !strings.Contains(c.sql, "$3") || strings.Contains(c.sql, "$1") {
			t.Errorf("placeholders do not start after the base: %s", c.sql)
		}
	}
}

func TestRawFragments(t *testing.T) {
	ok := filter.And(filter.Eq("a", 1), filter.NewRaw(Dialect, "metadata ? 'x'"))
	c, err := compileFilter(ok, 0)
	if err != nil || !strings.Contains(c.sql, "((metadata ? E'x'))") {
		t.Errorf("postgres fragment: %q %v", c.sql, err)
	}
	// Guarded, the rest of the filter is tested before the fragment.
	g, err := compileGuarded(ok, "collection_id = 1", 0)
	want := "collection_id = 1 AND (metadata->'a' = $1::text::jsonb AND TRUE) AND CASE WHEN collection_id = 1 AND (metadata->'a' = $2::text::jsonb AND TRUE) THEN (metadata->'a' = $3::text::jsonb AND ((metadata ? E'x'))) ELSE FALSE END"
	if err != nil || g.sql != want || len(g.args) != 3 {
		t.Errorf("guarded fragment:\n got %s %v\nwant %s", g.sql, err, want)
	}
	if _, err := compileFilter(filter.NewRaw("qdrant", map[string]any{}), 0); err == nil {
		t.Error("a qdrant fragment compiled for postgres")
	}
	if _, err := compileFilter(filter.NewRaw(Dialect, map[string]any{"not": "sql"}), 0); err == nil {
		t.Error("a non-string fragment compiled")
	}
}

package mariadb

import (
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/filter"
)

// TestRawFragment: a raw fragment is parsed and printed back with its
// strings bound, guarded by the rest of the filter; anything that is not
// one expression over the row is refused.
func TestRawFragment(t *testing.T) {
	for frag, ok := range map[string]bool{
		"JSON_VALUE(metadata, '$.tier') = 'gold'":    true,
		"(source_type = 'a') OR (source_name = 'b')": true,
		"source_name = 'it''s'":                      true,
		"":                                           false,
		"1 = 1) OR (1 = 1":                           false,
		"1); DROP TABLE quarry_collections; SELECT (1": false,
		"1 = 1 -- ":                             false,
		"1 = 1 # comment":                       false,
		"1 = 1 /* x */":                         false,
		"'unclosed":                             false,
		"source_name = 'a\\' OR 1=1 OR \\'b'":   false,
		"(1 = 1":                                false,
		"`quarry_collections`.name IS NOT NULL": false,
		"(SELECT COUNT(*) FROM quarry_collections) > 0": false,
		"sleep(3) = 0": false,
	} {
		c, err := compileWhere(filter.And(filter.Eq("tenant", "a"), filter.NewRaw(Dialect, frag)))
		if (err == nil) != ok {
			t.Errorf("compileWhere(%q) = %v, want ok=%v", frag, err, ok)
			continue
		}
		if ok && (!c.fenced || !strings.Contains(c.sql, "CASE WHEN") || strings.Count(c.sql, "?") != len(c.args)) {
			t.Errorf("compileWhere(%q) = %s %v: not guarded, or arguments do not line up", frag, c.sql, c.args)
		}
	}
}

// TestCompileBindsValues: values travel only as arguments, never in the
// SQL text.
func TestCompileBindsValues(t *testing.T) {
	evil := "x' OR '1'='1"
	f := filter.And(filter.Eq("tenant", evil), filter.In("sourceName", evil, "b"), filter.ContainsAny("tags", evil),
		filter.Gte("year", int64(2024)), filter.Eq("draft", true))
	c, err := compileWhere(f)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(c.sql, evil) || strings.Contains(c.sql, "2024") {
		t.Errorf("a value reached the SQL text: %s", c.sql)
	}
	n := 0
	for _, a := range c.args {
		if a == evil {
			n++
		}
	}
	if n != 3 || strings.Count(c.sql, "?") != len(c.args) {
		t.Errorf("%d placeholders, %d arguments (%d of them the value): %s", strings.Count(c.sql, "?"), len(c.args), n, c.sql)
	}
	if _, err := compileWhere(filter.Eq("bad-field", 1)); err == nil {
		t.Error("a field name that is not an identifier compiled")
	}
	if _, err := compileWhere(filter.NewRaw("postgres", "true")); err == nil {
		t.Error("another store's raw fragment compiled")
	}
}

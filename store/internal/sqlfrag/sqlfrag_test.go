package sqlfrag

import (
	"errors"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/filter"
)

// binder numbers MariaDB's bound strings so a test can read them back.
type binder struct{ args []any }

func (b *binder) bind(v any) string {
	b.args = append(b.args, v)
	return "?"
}

func TestPostgresAccepts(t *testing.T) {
	tests := []struct{ in, want string }{
		{"true", "TRUE"},
		{"metadata ? 'x'", "(metadata ? E'x')"},
		{"(metadata->>'a') = 'b' OR source_name LIKE 'docs/%'", "(((metadata ->> E'a') = E'b') OR (source_name LIKE E'docs/%'))"},
		{"metadata @? '$.tags[*] ? (@ == \"go\")'", `(metadata @? E'$.tags[*] ? (@ == "go")')`},
		{"content ILIKE 'it''s (open'", "(content ILIKE E'it''s (open')"},
		{`"source_name" = 'a'`, "(source_name = E'a')"},
		{`E'a\'b' = source_name`, "(E'a''b' = source_name)"},
		{`source_name = 'a\b'`, `(source_name = E'a\\b')`},
		{"lower(source_name) = 'x'", "(lower(source_name) = E'x')"},
		{"(metadata->>'year')::int >= 2020 AND (metadata->>'year')::int < 2026",
			"((CAST((metadata ->> E'year') AS integer) >= 2020) AND (CAST((metadata ->> E'year') AS integer) < 2026))"},
		{"cast(metadata->>'score' as double precision) > 0.5", "(CAST((metadata ->> E'score') AS double precision) > 0.5)"},
		{"metadata->'tags' ?| array['go','rag']", "((metadata -> E'tags') ?| ARRAY[E'go', E'rag'])"},
		{"source_type IN ('file', 'url') AND NOT content LIKE '%draft%'", "((source_type IN (E'file', E'url')) AND (NOT (content LIKE E'%draft%')))"},
		{"length(content) BETWEEN 10 AND 1e3", "(length(content) BETWEEN 10 AND 1e3)"},
		{"metadata->>'owner' IS NOT NULL", "((metadata ->> E'owner') IS NOT NULL)"},
		{"(metadata->>'at')::timestamptz > now() - interval '7 days'", "(CAST((metadata ->> E'at') AS timestamptz) > (now() - CAST(E'7 days' AS interval)))"},
		{"extract(year from (metadata->>'at')::date) = 2025", "(EXTRACT(YEAR FROM CAST((metadata ->> E'at') AS date)) = 2025)"},
		{"case when source_type = 'file' then true else false end", "(CASE WHEN (source_type = E'file') THEN TRUE ELSE FALSE END)"},
		{"metadata @> '{\"tenant\":\"a\"}'::jsonb", `(metadata @> CAST(E'{"tenant":"a"}' AS jsonb))`},
		{"-1 < -(2)", "((- 1) < (- 2))"},
		{"1 - -1 = 2", "((1 - (- 1)) = 2)"},
		{"content NOT ILIKE E'%\\u00e9t\\u00e9%'", "(content NOT ILIKE E'%été%')"},
		{"source_name IS DISTINCT FROM 'x'", "(source_name IS DISTINCT FROM E'x')"},
		{"id = 'x'||'y'", "(id = (E'x' || E'y'))"},
		{"to_tsvector('english', content) @@ plainto_tsquery('english', 'refund')",
			"(to_tsvector(E'english', content) @@ plainto_tsquery(E'english', E'refund'))"},
		{"content LIKE 'a!%' ESCAPE '!'", "(content LIKE E'a!%' ESCAPE E'!')"},
		{"'x'::varchar(10) = source_name", "(CAST(E'x' AS varchar(10)) = source_name)"},
		{"'{a}'::text[] = '{a}'", "(CAST(E'{a}' AS text[]) = E'{a}')"},
	}
	for _, tt := range tests {
		got, err := Rewrite(Postgres, tt.in, nil)
		if err != nil {
			t.Errorf("Rewrite(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("Rewrite(%q)\n got %s\nwant %s", tt.in, got, tt.want)
		}
	}
}

func TestMariaDBAccepts(t *testing.T) {
	tests := []struct {
		in, want string
		args     []any
	}{
		{"JSON_VALUE(metadata, '$.tenant') = 'a'", "(json_value(metadata, ?) = ?)", []any{"$.tenant", "a"}},
		{"source_name LIKE 'docs/%' OR source_type <=> 'url'", "((source_name LIKE ?) OR (source_type <=> ?))", []any{"docs/%", "url"}},
		{"CAST(JSON_VALUE(metadata, '$.year') AS SIGNED) >= 2020", "(CAST(json_value(metadata, ?) AS SIGNED) >= 2020)", []any{"$.year"}},
		{"JSON_CONTAINS(metadata, '\"go\"', '$.tags')", "json_contains(metadata, ?, ?)", []any{`"go"`, "$.tags"}},
		{"str_to_date(json_value(metadata,'$.at'), '%Y-%m-%d') > now() - INTERVAL 7 DAY",
			"(str_to_date(json_value(metadata, ?), ?) > (now() - INTERVAL (7) DAY))", []any{"$.at", "%Y-%m-%d"}},
		{"length(content) DIV 2 > 10 AND 7 MOD 2 = 1", "(((length(content) DIV 2) > 10) AND ((7 MOD 2) = 1))", nil},
		{"IF(source_type = 'file', 1, 0) = 1", "(if((source_type = ?), 1, 0) = 1)", []any{"file"}},
		{"date '2025-01-01' < curdate()", "(CAST(? AS DATE) < curdate())", []any{"2025-01-01"}},
		{"content NOT LIKE 'it''s%'", "(content NOT LIKE ?)", []any{"it's%"}},
	}
	for _, tt := range tests {
		var b binder
		got, err := Rewrite(MariaDB, tt.in, b.bind)
		if err != nil {
			t.Errorf("Rewrite(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("Rewrite(%q)\n got %s\nwant %s", tt.in, got, tt.want)
		}
		if len(b.args) != len(tt.args) {
			t.Errorf("Rewrite(%q) bound %v, want %v", tt.in, b.args, tt.args)
			continue
		}
		for i := range b.args {
			if b.args[i] != tt.args[i] {
				t.Errorf("Rewrite(%q) bound %v, want %v", tt.in, b.args, tt.args)
				break
			}
		}
	}
}

// hostile are fragments an attacker holding a granted key has sent, or
// would: each must be refused before any SQL runs, with a message that
// names what is wrong. Both dialects refuse every one of them.
var hostile = []struct{ frag, want string }{
	// escaping the parenthesis Quarry wraps a fragment in
	{"true) OR (true", "closed that was not opened"},
	{"1=1)) OR ((1=1", "closed that was not opened"},
	{"(true", `expected ")"`},
	// subqueries: through error text, as oracles, as IN lists
	{"(select cast(string_agg(content, ' | ') as int) from quarry_documents where metadata->>'tenant' = 'b') > 0", "subqueries"},
	{"exists (select 1 from quarry_documents)", "subqueries"},
	{"id in (select id from quarry_documents)", "subqueries"},
	{"source_name = (values ('x'))", "subqueries"},
	{"true and (with x as (select 1) select true)", "subqueries"},
	{"content = any (select content from quarry_documents)", "ANY and ALL"},
	{"(table quarry_documents) is null", "subqueries"},
	// table, schema and catalog references
	{"quarry_documents.content = 'x'", "qualified names"},
	{"pg_catalog.lower(content) = 'x'", "qualified names"},
	{"pg_authid = 'x'", "unknown name"},
	{"'pg_authid'::regclass is not null", "type regclass"},
	{"'1'::oid = 1", "type oid"},
	{"cast('lower(text)' as regprocedure) is null", "type regprocedure"},
	{"'x'::pg_catalog.text = 'x'", "qualified names"},
	// server functions: files, large objects, settings, sleeps, loads
	{"pg_read_file('/etc/passwd') is not null", "function pg_read_file"},
	{"lo_import('/etc/passwd') > 0", "function lo_import"},
	{"lo_export(lo_from_bytea(0, 'x'), '/tmp/q') = 1", "function lo_export"},
	{"set_config('search_path', 'pg_catalog', false) is not null", "function set_config"},
	{"current_setting('is_superuser') = 'on'", "function current_setting"},
	{"pg_sleep(30) is null", "function pg_sleep"},
	{"sleep(30) = 0", "function sleep"},
	{"benchmark(100000000, md5('x')) = 0", "function benchmark"},
	{"load_file('/etc/passwd') is not null", "function load_file"},
	{"version() like '%'", "function version"},
	{"dblink('x', 'y') is null", "function dblink"},
	{"get_lock('q', 10) = 1", "function get_lock"},
	{"pg_terminate_backend(1)", "function pg_terminate_backend"},
	{"lower(content) = lower(string_agg(content, ','))", "function string_agg"},
	{"count(*) > 0", "function count"},
	// statements, comments, placeholders, variables
	{"true; DELETE FROM quarry_documents", "statement separators"},
	{"true -- and tenant = 'a'", "comments"},
	{"true /* */", "comments"},
	{"true # x", "comments"},
	{"source_name = $1", "placeholders"},
	{"$$a$$ = 'a'", "placeholders"},
	{"@x := 1", "variables"},
	{"@@version like '%'", "variables"},
	{"true union select 1", "UNION"},
	{"source_name = 'a' union all select content from quarry_documents", "UNION"},
	// quoting and Unicode tricks
	{`'a\' OR true --'`, ""},
	{`E'a\' OR true`, "not closed"},
	{"'open", "not closed"},
	{`"open`, ""},
	{`U&'\0061' = 'a'`, "Unicode-escaped"},
	{`u&"content" = 'a'`, "Unicode-escaped"},
	{"source_name = N'x'", "prefixed strings"},
	{"source_name = X'41'", "prefixed strings"},
	{"source_name = 0x41", "runs into letters"},
	{"content = 'x'\u2028OR true", "outside ASCII"},
	{"content\u00a0= 'x'", "outside ASCII"},
	{"ｓｅｌｅｃｔ 1", "outside ASCII"},
	{`E'\x41' = 'A'`, "escape is not allowed"},
	{`E'\101' = 'A'`, "escape is not allowed"},
	{`E'\u0000' = 'A'`, "not a Unicode character"},
	{"'a\x00' = 'a'", "NUL"},
	{"`content` = 'x'", "quoted identifiers"},
	{`"pg_authid" = 'x'`, ""},
	{"content = 'x' collate \"C\"", ""},
	{"metadata[0] = 'x'", "subscripts"},
	{"", "empty"},
	{"   ", "empty"},
	{"content", ""},
}

func TestRefusesHostileFragments(t *testing.T) {
	for _, d := range []*Dialect{Postgres, MariaDB} {
		for _, tt := range hostile {
			var b binder
			got, err := Rewrite(d, tt.frag, b.bind)
			if err == nil {
				// "content" alone parses; the store refuses a non-boolean
				// by the database's type check, which is fine: it names
				// nothing outside the row.
				if tt.frag == "content" {
					continue
				}
				t.Errorf("%s: Rewrite(%q) accepted it as %s", d.Name, tt.frag, got)
				continue
			}
			var se *filter.SyntaxError
			if !errors.As(err, &se) {
				t.Errorf("%s: Rewrite(%q): %T, want *filter.SyntaxError", d.Name, tt.frag, err)
			}
			if tt.want != "" && !strings.Contains(err.Error(), tt.want) && d == Postgres {
				t.Errorf("%s: Rewrite(%q) = %v, want it to say %q", d.Name, tt.frag, err, tt.want)
			}
			if !strings.Contains(err.Error(), d.Name+" raw fragment") {
				t.Errorf("%s: Rewrite(%q) = %v: the message does not name the dialect", d.Name, tt.frag, err)
			}
		}
	}
}

func TestMariaDBRefuses(t *testing.T) {
	for _, frag := range []string{
		`"a" = source_name`,            // a string or an identifier, by the server's mode
		`source_name = 'a\'b'`,         // a backslash escape, by the mode
		"source_name = 'a' || true",    // OR or concatenation, by the mode
		"metadata->>'$.a' = 'b'",       // not MariaDB's
		"content ILIKE 'x'",            // not MariaDB's
		"'1'::int = 1",                 // PostgreSQL's cast
		"interval '1 day' is not null", // MariaDB's takes a unit
	} {
		if got, err := Rewrite(MariaDB, frag, (&binder{}).bind); err == nil {
			t.Errorf("Rewrite(%q) accepted it as %s", frag, got)
		}
	}
}

func TestLimits(t *testing.T) {
	deep := strings.Repeat("(", MaxDepth+2) + "true" + strings.Repeat(")", MaxDepth+2)
	nots := strings.Repeat("not ", MaxDepth+2) + "true"
	wide := "id IN (" + strings.TrimSuffix(strings.Repeat("'x', ", MaxNodes), ", ") + ")"
	long := "content = '" + strings.Repeat("x", MaxBytes) + "'"
	for name, frag := range map[string]string{"deep": deep, "nots": nots, "wide": wide, "long": long} {
		if _, err := Parse(Postgres, frag); err == nil {
			t.Errorf("%s: a fragment past the limits parsed", name)
		}
	}
	ok := strings.Repeat("(", MaxDepth-2) + "true" + strings.Repeat(")", MaxDepth-2)
	if _, err := Parse(Postgres, ok); err != nil {
		t.Errorf("nesting within the limit: %v", err)
	}
}

func TestErrorPosition(t *testing.T) {
	_, err := Parse(Postgres, "lower(content) = 'é' and pg_sleep(1)")
	var se *filter.SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("%v", err)
	}
	if se.Offset != 26 || se.Column != 26 {
		t.Errorf("offset %d column %d, want 26 and 26: %v", se.Offset, se.Column, err)
	}
	if !strings.Contains(err.Error(), `"pg_sleep"`) {
		t.Errorf("the message does not name the token: %v", err)
	}
}

// TestPrintedReparses: what Quarry prints parses again to itself, so the
// statement holds exactly the tree that was checked.
func TestPrintedReparses(t *testing.T) {
	for _, frag := range []string{
		"(metadata->>'a') = 'b' OR source_name LIKE 'docs/%' and not content ilike '%x%'",
		"case source_type when 'file' then length(content) > 3 else metadata ? 'k' end",
		"coalesce((metadata->>'n')::numeric, 0) * 2 + 1 between -5 and 5e2",
	} {
		once, err := Rewrite(Postgres, frag, nil)
		if err != nil {
			t.Fatalf("%q: %v", frag, err)
		}
		twice, err := Rewrite(Postgres, once, nil)
		if err != nil {
			t.Fatalf("printed %q does not parse: %v", once, err)
		}
		if once != twice {
			t.Errorf("printing is not stable:\n%s\n%s", once, twice)
		}
	}
}

func FuzzRewrite(f *testing.F) {
	for _, h := range hostile {
		f.Add(h.frag)
	}
	f.Add("(metadata->>'a') = 'b' OR source_name LIKE 'docs/%'")
	f.Add("JSON_VALUE(metadata, '$.tenant') = 'a' AND 3 DIV 2 = 1")
	f.Add(`E'a\'b\u00e9' = source_name`)
	f.Fuzz(func(t *testing.T, frag string) {
		for _, d := range []*Dialect{Postgres, MariaDB} {
			var b binder
			out, err := Rewrite(d, frag, b.bind)
			if err != nil {
				continue
			}
			// What is printed holds nothing that could end or hide part
			// of the statement, and parses back to itself.
			if strings.ContainsAny(out, ";$@`\\#") && d == MariaDB {
				t.Fatalf("%s: %q printed as %q", d.Name, frag, out)
			}
			for _, bad := range []string{";", "--", "/*"} {
				if strings.Contains(stripStrings(out), bad) {
					t.Fatalf("%s: %q printed as %q, which holds %s outside strings", d.Name, frag, out, bad)
				}
			}
			if d == Postgres {
				again, err := Rewrite(d, out, nil)
				if err != nil || again != out {
					t.Fatalf("%s: %q printed as %q, which reparses as %q (%v)", d.Name, frag, out, again, err)
				}
			}
			if strings.Count(out, "?") < len(b.args) {
				t.Fatalf("%s: %d bound values for %q", d.Name, len(b.args), out)
			}
		}
	})
}

// stripStrings removes E'…' literals as Quarry prints them.
func stripStrings(s string) string {
	var b strings.Builder
	in := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case in && c == '\\':
			i++
		case in && c == '\'' && i+1 < len(s) && s[i+1] == '\'':
			i++
		case c == '\'':
			in = !in
		case !in:
			b.WriteByte(c)
		}
	}
	return b.String()
}

package server_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/internal/mariadbtest"
	"github.com/quarry-rag/quarry/internal/pgtest"
	"github.com/quarry-rag/quarry/keys"
	_ "github.com/quarry-rag/quarry/store/mariadb"
)

// hostilePostgres are fragments an attacker holding a tenant key that was
// granted raw filters sends to a PostgreSQL store: subqueries through error
// text and as oracles, files and large objects, settings, sleeps, UNION,
// comments, stacked statements, catalog casts, quoting and Unicode tricks.
// The last few parse (they are expressions over the row) and must still
// see nothing of the other tenant.
var hostilePostgres = []string{
	`(select cast(string_agg(content, ' | ') as int) from quarry_documents where metadata->>'tenant' = 'globex') > 0`,
	`exists (select 1 from quarry_documents where content like '%forty%')`,
	`id in (select id from quarry_documents)`,
	`(with x as (select content from quarry_documents) select count(*) from x) > 0`,
	`lower(content) = any(select lower(content) from quarry_documents)`,
	`'x' || (select content from quarry_documents limit 1) = 'x'`,
	`true) OR (true`,
	`1=1)) OR ((1=1`,
	`pg_read_file('/etc/passwd') is not null`,
	`lo_import('/etc/passwd') > 0`,
	`lo_export(lo_from_bytea(0, 'x'), '/tmp/quarry-attack') = 1`,
	`set_config('search_path', 'pg_catalog', false) is not null`,
	`current_setting('is_superuser') = 'on'`,
	`pg_sleep(30) is null`,
	`pg_catalog.pg_sleep(5) is null`,
	`pg_terminate_backend(pg_backend_pid())`,
	`pg_advisory_lock(1) is null`,
	`txid_current() > 0`,
	`version() like '%'`,
	`query_to_xml('select content from quarry_documents', true, true, '') is not null`,
	`dblink_exec('dbname=postgres', 'drop table quarry_documents') = 'x'`,
	`true union select content from quarry_documents`,
	`true; delete from quarry_documents`,
	`true -- and`,
	`true /* */`,
	`source_name = $1`,
	`$$x$$ = 'x'`,
	`'pg_authid'::regclass is not null`,
	`cast('1' as oid) = 1`,
	`(content)::regclass is null`,
	`quarry_documents.content like '%forty%'`,
	`U&'\0061' = 'a'`,
	`content = E'\x27 or true'`,
	`content collate "C" = 'x'`,
	`content = 'x'` + "\u2028" + `or true`,
	// These parse: the scope and the guard keep them to the tenant's rows.
	`content like '%forty%' or metadata->>'tenant' = 'globex'`,
	`case when content like '%forty%' then (1/0)::text = '' else true end`,
	`jsonb_path_exists(metadata, '$.tenant ? (@ == "globex")') or true`,
}

// hostileMariaDB are the same attacks in MariaDB's dialect.
var hostileMariaDB = []string{
	`(SELECT GROUP_CONCAT(content) FROM quarry_c_kb) IS NOT NULL`,
	`EXISTS (SELECT 1 FROM quarry_c_kb WHERE content LIKE '%forty%')`,
	`id IN (SELECT id FROM quarry_c_kb)`,
	`EXTRACTVALUE(1, CONCAT(0x7e, (SELECT content FROM quarry_c_kb LIMIT 1))) = 1`,
	`JSON_EXTRACT((SELECT config FROM quarry_collections LIMIT 1), '$') IS NOT NULL`,
	`1=1) OR (1=1`,
	`SLEEP(30) = 0`,
	`IF(content LIKE '%forty%', SLEEP(5), 0) = 0`,
	`BENCHMARK(100000000, MD5('x')) = 0`,
	`LOAD_FILE('/etc/passwd') IS NOT NULL`,
	`GET_LOCK('q', 10) = 1`,
	`@@version LIKE '%'`,
	`(@x := 1) = 1`,
	`VERSION() LIKE '%'`,
	`USER() LIKE '%'`,
	`DATABASE() = 'x'`,
	`UPDATEXML(1, 'x', 'y') = 1`,
	`NAME_CONST('a', 1) = 1`,
	`1=1; DELETE FROM quarry_c_kb`,
	`1=1 -- `,
	`1=1 # x`,
	`1=1 /* */`,
	`content = 'x' UNION SELECT content FROM quarry_c_kb`,
	`quarry_c_kb.content LIKE '%forty%'`,
	"`content` = 'x'",
	`content = "x"`,
	`content = 'a\' OR 1=1 -- '`,
	`content = 0x41`,
	`content = X'41'`,
	`content = CHAR(65)`,
	`CONVERT(content USING latin1) = 'x'`,
	`content RLIKE 'x'`,
	`content || 'x' = 'x'`,
	`content = 'x'` + "\u00a0" + `OR 1=1`,
	// These parse: the scope and the guard keep them to the tenant's rows.
	`content LIKE '%forty%' OR JSON_VALUE(metadata, '$.tenant') = 'globex'`,
	`CASE WHEN content LIKE '%forty%' THEN 1 ELSE 0 END = 0 OR TRUE`,
}

// TestGrantedFragmentsCannotEscape sends every hostile fragment, with a
// tenant key granted raw filters, to search (each mode), ask, count and
// delete on a live PostgreSQL and MariaDB store: no response holds the
// other tenant's text or a database's message, none is a server error or
// takes over 3 s, the other tenant's plain searches are answered alongside,
// and every row is still there after.
func TestGrantedFragmentsCannotEscape(t *testing.T) {
	dialects := []struct {
		name  string
		url   func(t *testing.T) string
		frags []string
	}{
		{"postgres", func(t *testing.T) string { return pgtest.FreshDSN(t) }, hostilePostgres},
		{"mariadb", func(t *testing.T) string { return mariadbtest.Fresh(t, mariadbtest.URL(t)) }, hostileMariaDB},
	}
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			if len(d.frags) < 30 {
				t.Fatalf("%d hostile fragments; the suite promises at least 30", len(d.frags))
			}
			url := d.url(t)
			f := newFixture(t, func(c *config) { c.store = url })
			admin := mustKey(t, f.keys, keys.Spec{Permission: keys.PermAdmin})
			granted := mustKey(t, f.keys, keys.Spec{Name: "acme", Permission: keys.PermWrite, Filter: "tenant = 'acme'", AllowRawFilters: true})
			globex := mustKey(t, f.keys, keys.Spec{Name: "globex", Permission: keys.PermRead, Filter: "tenant = 'globex'"})
			expect(t, "create", f.do(t, "POST", "/v1/collections", admin, map[string]any{"name": "kb", "schema": tenantSchema}), 201, "")
			expect(t, "seed", f.do(t, "POST", "/v1/collections/kb/documents", admin, map[string]any{"documents": []map[string]any{
				{"id": "a1", "text": "Acme pricing: the secret discount is ten percent.", "source": "pricing.md", "metadata": map[string]any{"tenant": "acme", "year": 2025}},
				{"id": "g1", "text": "Globex pricing: the secret discount is forty percent.", "source": "pricing.md", "metadata": map[string]any{"tenant": "globex", "year": 2025}},
			}}), 200, "")

			// The other tenant searches throughout.
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var slowest time.Duration
			var mu sync.Mutex
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					start := time.Now()
					r := f.do(t, "POST", "/v1/collections/kb/search", globex, map[string]any{"query": "secret discount", "mode": "keyword"})
					mu.Lock()
					slowest = max(slowest, time.Since(start))
					mu.Unlock()
					if r.status != 200 || !strings.Contains(r.raw, "forty") {
						t.Errorf("the other tenant's search failed during the attack: %d %s", r.status, r.raw)
						return
					}
				}
			})

			requests := 0
			for _, frag := range d.frags {
				flt := map[string]any{"operator": "raw", "store": d.name, "fragment": frag}
				for _, rq := range []struct {
					path string
					body map[string]any
				}{
					{"/v1/collections/kb/search", map[string]any{"query": "secret discount", "mode": "keyword", "filter": flt}},
					{"/v1/collections/kb/search", map[string]any{"query": "secret discount", "mode": "vector", "filter": flt}},
					{"/v1/collections/kb/search", map[string]any{"query": "secret discount", "mode": "hybrid", "filter": flt}},
					{"/v1/collections/kb/ask", map[string]any{"question": "What is the secret discount?", "filter": flt}},
					{"/v1/collections/kb/documents/delete", map[string]any{"filter": map[string]any{"operator": "and", "conditions": []any{
						map[string]any{"operator": "eq", "field": "tenant", "value": "nobody"}, flt}}}},
				} {
					requests++
					start := time.Now()
					r := f.do(t, "POST", rq.path, granted, rq.body)
					took := time.Since(start)
					what := rq.path + " " + frag
					if testing.Verbose() && took > 500*time.Millisecond {
						t.Logf("SLOW %s %s -> %d %s", what, took, r.status, r.raw)
					}
					if took > 3*time.Second {
						t.Errorf("%s took %s", what, took)
					}
					if r.status >= 500 {
						t.Errorf("%s: a server error: %s", what, r.raw)
					}
					for _, leak := range []string{"forty", "Globex", "g1", "ERROR:", "SQLSTATE 42", "Error 1", "syntax error at", "permission denied", "quarry_collections\" does not exist"} {
						if strings.Contains(r.raw, leak) {
							t.Errorf("%s: the response holds %q: %s", what, leak, r.raw)
						}
					}
					if r.status >= 400 && r.code() != "invalid_filter" && r.code() != "invalid_request" {
						t.Errorf("%s: refused as %d %s, want a 4xx filter or request error: %s", what, r.status, r.code(), r.raw)
					}
				}
			}
			close(stop)
			wg.Wait()
			t.Logf("%d hostile requests; the other tenant's slowest search meanwhile took %s", requests, slowest)
			if slowest > 3*time.Second {
				t.Errorf("the other tenant waited %s for a search during the attack", slowest)
			}
			// Every row is there, and the pooled connections answer as
			// before.
			for range 3 {
				r := f.do(t, "POST", "/v1/collections/kb/search", admin, map[string]any{"query": "secret discount", "mode": "keyword"})
				if got := len(results(r)); got != 2 {
					t.Fatalf("after the attack the collection answers %d of its 2 documents: %s", got, r.raw)
				}
			}
		})
	}
}

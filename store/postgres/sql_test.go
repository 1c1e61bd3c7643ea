package postgres

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/filter"
)

var update = flag.Bool("update", false, "rewrite the golden SQL files")

// TestSearchSQLGolden pins the statements each search runs, with ts_rank
// and with ParadeDB's BM25 (which cannot be installed here, so its SQL is
// only ever checked this way). Values ride in arguments: the filter's
// hostile strings must never reach the text.
func TestSearchSQLGolden(t *testing.T) {
	f, err := filter.Parse(`tenant = 'ac''me $1 ü' and (year >= 2024 or tags contains any ('go', 'x'' OR 1=1 --'))`)
	if err != nil {
		t.Fatal(err)
	}
	for _, bm25 := range []bool{false, true} {
		lead := keywordArgs(bm25, "english", "hnsw index")
		wc, err := where(7, f, len(lead))
		if err != nil {
			t.Fatal(err)
		}
		w, args := wc.sql, wc.args
		hw, err := where(7, f, len(lead)+1)
		if err != nil {
			t.Fatal(err)
		}
		engine := "sql"
		if bm25 {
			engine = "pgsearch"
		}
		golden := map[string]string{
			"keyword_" + engine: keywordSQL(bm25, w, 10),
			"hybrid_" + engine:  hybridSQL(bm25, "384", hw.sql, 20),
		}
		if !bm25 {
			vw, err := where(7, f, 1)
			if err != nil {
				t.Fatal(err)
			}
			golden["vector"] = vectorSQL("384", vw.sql, 18)
		}
		for name, sql := range golden {
			for _, a := range args {
				if s, ok := a.(string); ok && strings.Contains(sql, s) {
					t.Errorf("%s: argument %q appears in the SQL text", name, s)
				}
			}
			for _, bad := range []string{"ac'me", "OR 1=1", "ü"} {
				if strings.Contains(sql, bad) {
					t.Errorf("%s: %q appears in the SQL text", name, bad)
				}
			}
			path := filepath.Join("testdata", "golden", name+".sql")
			if *update {
				if err := os.WriteFile(path, []byte(sql+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -run TestSearchSQLGolden -update)", err)
			}
			if got := sql + "\n"; got != string(want) {
				t.Errorf("%s differs from %s:\n%s", name, path, got)
			}
		}
	}
}

// TestBM25SQLShape checks what the ParadeDB statements must hold beyond
// their text: the collection and filter inside every branch before its
// limit, and pg_search's operators on the index's key field.
func TestBM25SQLShape(t *testing.T) {
	w, err := where(3, filter.Eq("tenant", "acme"), 2)
	if err != nil {
		t.Fatal(err)
	}
	sql := hybridSQL(true, "8", w.sql, 10)
	for _, branch := range []string{"v AS (", "k AS ("} {
		i := strings.Index(sql, branch)
		if i < 0 {
			t.Fatalf("no branch %q in %s", branch, sql)
		}
		rest := sql[i:]
		wi, li := strings.Index(rest, "collection_id = 3 AND metadata->'tenant' = $3"), strings.Index(rest, "LIMIT 10")
		if wi < 0 || li < 0 || wi > li {
			t.Errorf("branch %q does not filter before its limit:\n%s", branch, rest)
		}
	}
	for _, want := range []string{"content ||| $1", "pdb.score(search_id)", "$2::vector(8)"} {
		if !strings.Contains(sql, want) {
			t.Errorf("hybrid BM25 SQL lacks %q", want)
		}
	}
	if !strings.Contains(bm25SetupSQL, "key_field = 'search_id'") || !strings.Contains(bm25SetupSQL, "collection_id") {
		t.Errorf("BM25 index: %s", bm25SetupSQL)
	}
}

package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/internal/pgtest"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/embedded"
	"github.com/quarry-rag/quarry/store/postgres"
	"github.com/quarry-rag/quarry/store/storetest"
)

// DSNEnv names the PostgreSQL server the integration tests use.
const DSNEnv = pgtest.DSNEnv

// freshDSN is a schema of the test's own (pgtest.FreshDSN).
func freshDSN(t testing.TB) string { return pgtest.FreshDSN(t) }

func TestStoreConformance(t *testing.T) {
	freshDSN(t) // skip early without a server
	storetest.Run(t, func(t *testing.T) *store.Store {
		s, err := store.Open(context.Background(), freshDSN(t))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestDimensionLimit(t *testing.T) {
	s, err := store.Open(context.Background(), freshDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.CreateCollection(context.Background(), store.CollectionConfig{Name: "big", Model: storetest.Model(postgres.MaxHNSWDimension + 1)})
	if err == nil {
		t.Fatal("a collection above the HNSW dimension limit was created")
	}
}

// TestSelectiveFilterUsesIndex forces the HNSW index and checks that a
// filter matching a handful of rows still returns all of them: iterative
// index scans keep walking the graph until enough rows pass.
func TestSelectiveFilterUsesIndex(t *testing.T) {
	dsn := freshDSN(t)
	ctx := context.Background()
	s, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := s.CreateCollection(ctx, store.CollectionConfig{Name: "sel", Schema: storetest.Schema(), Model: storetest.Model(8)})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	var docs []*document.Document
	for i := range 3000 {
		d := document.New(fmt.Sprintf("doc %d", i))
		d.ID = fmt.Sprintf("d%04d", i)
		d.Embedding = make([]float32, 8)
		for j := range d.Embedding {
			d.Embedding[j] = r.Float32() - 0.5
		}
		tenant := "common"
		if i%600 == 7 {
			tenant = "rare"
		}
		tags := []any{"db"}
		if i%300 == 0 {
			tags = []any{"go", "rag"}
		}
		d.Metadata = map[string]any{"tenant": tenant, "year": int64(2000 + i%30), "price": float64(i%500) + 0.5, "tags": tags}
		docs = append(docs, d)
	}
	if err := c.Upsert(ctx, docs); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// The query shape Quarry sends must be able to use the partial
	// expression index (the planner may still prefer a scan on small data).
	if _, err := conn.Exec(ctx, `ANALYZE quarry_documents; SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_sort = off`); err != nil {
		t.Fatal(err)
	}
	var plan string
	rows, err := conn.Query(ctx, `EXPLAIN SELECT id FROM quarry_documents WHERE collection_id = 1 ORDER BY embedding::vector(8) <=> $1::vector(8) LIMIT 10`, "[1,0,0,0,0,0,0,0]")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var line string
		rows.Scan(&line)
		plan += line + "\n"
	}
	if !strings.Contains(plan, "quarry_hnsw_1") {
		t.Errorf("the vector query cannot use the collection's HNSW index:\n%s", plan)
	}
	// Filters as compileFilter writes them use the filterable fields'
	// partial indexes: B-tree for scalars, GIN (bitmap scans only) for
	// string[].
	if _, err := conn.Exec(ctx, `SET enable_bitmapscan = on`); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ where, index string }{
		{`metadata->'tenant' = '"rare"'::jsonb`, "quarry_f_1_0"},
		{`metadata->'year' = ANY('{1990,1991}'::text[]::jsonb[])`, "quarry_f_1_2"},
		{`(jsonb_typeof(metadata->'price') = 'number' AND metadata->'price' < '3.5'::jsonb)`, "quarry_f_1_3"},
		{`(jsonb_typeof(metadata->'tags') = 'array' AND metadata->'tags' ?| '{go,rag}'::text[])`, "quarry_f_1_5"},
	} {
		rows, err := conn.Query(ctx, `EXPLAIN SELECT count(*) FROM quarry_documents WHERE collection_id = 1 AND `+tt.where)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		if plan := strings.Join(lines, "\n"); !strings.Contains(plan, tt.index) {
			t.Errorf("%s does not use %s:\n%s", tt.where, tt.index, plan)
		}
	}
	hits, err := c.Search(ctx, store.SearchRequest{Embedding: docs[0].Embedding, Filter: filter.Eq("tenant", "rare"), TopK: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 5 {
		t.Errorf("a filter matching 5 rows returned %d", len(hits))
	}
	if err := s.DropCollection(ctx, "sel"); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND (indexname LIKE 'quarry\_f\_1\_%' OR indexname = 'quarry_hnsw_1')`).Scan(&left); err != nil || left != 0 {
		t.Errorf("%d indexes of the dropped collection left (%v)", left, err)
	}
}

// TestCopyFromEmbedded migrates a collection from the embedded store and
// checks the copy answers the same searches.
func TestCopyFromEmbedded(t *testing.T) {
	dsn := freshDSN(t)
	ctx := context.Background()
	b, err := embedded.Open(ctx, t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	src := store.New(b)
	defer src.Close()
	c, err := src.CreateCollection(ctx, store.CollectionConfig{Name: "docs", Schema: storetest.Schema(), Model: storetest.Model(3)})
	if err != nil {
		t.Fatal(err)
	}
	var docs []*document.Document
	for i := range 50 {
		d := document.New(fmt.Sprintf("document %d about %s", i, []string{"refunds", "shipping"}[i%2]))
		d.ID = fmt.Sprintf("d%02d", i)
		d.SourceType, d.SourceName = "file", fmt.Sprintf("f%d.md", i%10)
		d.Embedding = []float32{1, float32(i), 0.5}
		d.Metadata = map[string]any{"tenant": "acme", "year": int64(2000 + i), "price": 9.0}
		docs = append(docs, d)
	}
	if err := c.Upsert(ctx, docs); err != nil {
		t.Fatal(err)
	}
	dst, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	rep, err := store.CopyCollection(ctx, c, dst, store.CopyOptions{})
	if err != nil || rep.Documents != 50 {
		t.Fatalf("copy: %+v %v", rep, err)
	}
	pc, _ := dst.Collection(ctx, "docs")
	for _, f := range []filter.Expr{filter.Gte("year", 2040), filter.Eq("sourceName", "f3.md")} {
		a, _ := c.Search(ctx, store.SearchRequest{Embedding: []float32{1, 10, 0.5}, Filter: f, TopK: 5})
		z, _ := pc.Search(ctx, store.SearchRequest{Embedding: []float32{1, 10, 0.5}, Filter: f, TopK: 5})
		if len(a) != len(z) {
			t.Fatalf("%v: %d vs %d hits", f, len(a), len(z))
		}
		for i := range a {
			if a[i].Doc.ID != z[i].Doc.ID {
				t.Errorf("%v hit %d: %s vs %s", f, i, a[i].Doc.ID, z[i].Doc.ID)
			}
		}
	}
	got, _ := pc.Get(ctx, []string{"d07"})
	if len(got) != 1 || got[0].Metadata["price"] != 9.0 || got[0].Metadata["year"] != int64(2007) {
		t.Errorf("metadata types after the copy: %#v", got)
	}
}

// TestRuntimeNeedsOnlyDML sets the store up as the owner, then uses an
// existing collection as a role that may only read and write rows.
func TestRuntimeNeedsOnlyDML(t *testing.T) {
	dsn := freshDSN(t)
	ctx := context.Background()
	owner, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := owner.CreateCollection(ctx, store.CollectionConfig{Name: "docs", Schema: storetest.Schema(), Model: storetest.Model(2)}); err != nil {
		t.Fatal(err)
	}
	owner.Close()
	u, _ := url.Parse(dsn)
	schema := strings.Split(u.Query().Get("search_path"), ",")[0]
	role := "quarry_rt_" + schema[len("quarry_test_"):]
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, stmt := range []string{
		`CREATE ROLE ` + role + ` LOGIN`,
		`GRANT USAGE ON SCHEMA ` + schema + ` TO ` + role,
		// No grant on sequences: rows the runtime writes take their ids
		// from identity columns, which need only the tables' grants.
		`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ` + schema + ` TO ` + role,
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), dsn)
		if err == nil {
			c.Exec(context.Background(), `DROP OWNED BY `+role)
			c.Exec(context.Background(), `DROP ROLE `+role)
			c.Close(context.Background())
		}
	})
	u.User = url.User(role)
	rt, err := store.Open(ctx, u.String())
	if err != nil {
		t.Fatalf("open as the runtime role: %v", err)
	}
	defer rt.Close()
	c, err := rt.Collection(ctx, "docs")
	if err != nil {
		t.Fatal(err)
	}
	d := document.New("runtime writes")
	d.Embedding = []float32{1, 0}
	d.Metadata = map[string]any{"tenant": "acme"}
	if err := c.Upsert(ctx, []*document.Document{d}); err != nil {
		t.Fatalf("upsert as the runtime role: %v", err)
	}
	hits, err := c.Search(ctx, store.SearchRequest{Query: "runtime", Embedding: []float32{1, 0}})
	if err != nil || len(hits) != 1 {
		t.Fatalf("search as the runtime role: %v %v", hits, err)
	}
	if n, err := c.Delete(ctx, filter.Eq("tenant", "acme")); err != nil || n != 1 {
		t.Errorf("delete as the runtime role: %d %v", n, err)
	}
	// The hierarchy, jobs and threads the runtime writes need no sequence.
	hs, err := rt.Hierarchy()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hs.PutNodes(ctx, "docs", []store.Node{{Kind: store.NodeRoot, Name: "Root", Path: "/Root"}}); err != nil {
		t.Errorf("put nodes as the runtime role: %v", err)
	}
	js, _ := rt.Jobs()
	if err := js.PutJob(ctx, store.Job{ID: "rt-job", Kind: "ingest", Collection: "docs", State: store.JobDone}); err != nil {
		t.Errorf("put a job as the runtime role: %v", err)
	}
	ts, _ := rt.Threads()
	if err := ts.AppendTurns(ctx, "rt-thread", []store.Turn{{Role: "user", Content: "hello"}}); err != nil {
		t.Errorf("append turns as the runtime role: %v", err)
	}
	// Creating a collection builds an index: that stays with the owner.
	if _, err := rt.CreateCollection(ctx, store.CollectionConfig{Name: "other", Model: storetest.Model(2)}); err == nil {
		t.Error("the runtime role created a collection")
	}
	// Refreshing statistics is the owner's; the runtime role is skipped
	// without an error, so ingestion can always ask.
	if err := rt.Backend().(*postgres.Backend).Analyze(ctx); err != nil {
		t.Errorf("analyze as the runtime role: %v", err)
	}
	ob, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	if err := ob.Analyze(ctx); err != nil {
		t.Errorf("analyze as the owner: %v", err)
	}
	var analyzed bool
	if err := pool(t, dsn).QueryRow(ctx, `SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables WHERE relid = to_regclass('quarry_documents')`).Scan(&analyzed); err != nil || !analyzed {
		t.Errorf("quarry_documents not analysed after Analyze (%v)", err)
	}
}

// pool connects for one test's direct queries; the connection closes with
// the test.
func pool(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// TestNodeIDsBecomeIdentity opens a store whose node ids an older setup
// made bigserial: the owner's open turns the column into an identity that
// goes on after the ids already taken.
func TestNodeIDsBecomeIdentity(t *testing.T) {
	dsn := freshDSN(t)
	ctx := context.Background()
	s, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateCollection(ctx, store.CollectionConfig{Name: "docs", Model: storetest.Model(2)}); err != nil {
		t.Fatal(err)
	}
	hs, _ := s.Hierarchy()
	if _, err := hs.PutNodes(ctx, "docs", []store.Node{{Kind: store.NodeRoot, Name: "Root", Path: "/Root"}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	db := pool(t, dsn)
	for _, stmt := range []string{ // as the older setup made it
		`ALTER TABLE quarry_nodes ALTER COLUMN id DROP IDENTITY`,
		`CREATE SEQUENCE quarry_nodes_id_seq OWNED BY quarry_nodes.id`,
		`SELECT setval('quarry_nodes_id_seq', (SELECT max(id) FROM quarry_nodes))`,
		`ALTER TABLE quarry_nodes ALTER COLUMN id SET DEFAULT nextval('quarry_nodes_id_seq')`,
	} {
		if _, err := db.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	s, err = store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var identity string
	if err := db.QueryRow(ctx, `SELECT attidentity::text FROM pg_attribute WHERE attrelid = to_regclass('quarry_nodes') AND attname = 'id'`).Scan(&identity); err != nil || identity != "d" {
		t.Fatalf("id column identity %q, %v; want d (by default)", identity, err)
	}
	hs, _ = s.Hierarchy()
	nodes, err := hs.Nodes(ctx, "docs")
	if err != nil || len(nodes) != 1 {
		t.Fatal(nodes, err)
	}
	put, err := hs.PutNodes(ctx, "docs", []store.Node{{ParentID: nodes[0].ID, Kind: store.NodeFundamental, Name: "a", Path: "/Root/a", Folder: "a"}})
	if err != nil || put[0].ID <= nodes[0].ID {
		t.Errorf("a node after the upgrade: %+v, %v (the root has id %d)", put, err, nodes[0].ID)
	}
}

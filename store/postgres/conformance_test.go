package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/internal/conformance"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/postgres"
)

// TestParadeDBConformance runs the paradedb area. Its "table" is Quarry's
// collection (all collections share one table, so the name a user gives is
// the collection's); cases about rows run against the real server.
func TestParadeDBConformance(t *testing.T) {
	dsn := freshDSN(t)
	ctx := context.Background()
	s, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cases := conformance.Load(t, "paradedb")
	diffs := conformance.LoadDifferences(t, filepath.Join("testdata", "conformance_differences.json"))
	conformance.Run(t, cases, diffs, func(c conformance.Case) []conformance.Result {
		var in map[string]json.RawMessage
		var exp struct {
			Valid bool                       `json:"valid"`
			Error *conformance.ExpectedError `json:"error"`
		}
		if err := c.Decode(&in, &exp); err != nil {
			return conformance.Of(err)
		}
		check := func(err error) []conformance.Result {
			switch {
			case exp.Error == nil && err != nil:
				return conformance.Fail("rejected: %v", err)
			case exp.Error != nil && err == nil:
				return conformance.Fail("accepted, want an error like %q", exp.Error.Message)
			}
			return conformance.Pass()
		}
		switch {
		case strings.HasPrefix(c.Name, "table name validation"):
			var name string
			json.Unmarshal(in["tableName"], &name)
			return check(store.CollectionConfig{Name: name, Model: embed.ModelInfo{Provider: "p", Model: "m", Dimension: 3}}.Check())
		case strings.HasPrefix(c.Name, "vector validation"):
			var dim int
			var raw []any
			json.Unmarshal(in["dimensions"], &dim)
			json.Unmarshal(in["vector"], &raw)
			v := make([]float32, len(raw))
			for i, x := range raw {
				switch x := x.(type) {
				case float64:
					v[i] = float32(x)
				case string:
					v[i] = float32(math.Inf(1))
				}
			}
			return check(document.CheckVector(v, dim))
		case strings.HasPrefix(c.Name, "dimensions must be positive"):
			var dim int
			json.Unmarshal(in["dimensions"], &dim)
			_, err := s.CreateCollection(ctx, store.CollectionConfig{Name: "dims", Model: embed.ModelInfo{Provider: "p", Model: "m", Dimension: dim}})
			if err != nil && !strings.Contains(err.Error(), "dimension must be positive") {
				return conformance.Fail("message %q does not say the dimension must be positive", err)
			}
			return check(err)
		case strings.HasPrefix(c.Name, "topK must be positive"), strings.HasPrefix(c.Name, "rrfK must be positive"):
			coll := ensure(t, s, "knobs")
			req := store.SearchRequest{Query: "x", Mode: store.ModeHybrid, Embedding: []float32{1, 0, 0}}
			var n int
			if b, ok := in["topK"]; ok {
				json.Unmarshal(b, &n)
				req.TopK = n
			} else {
				json.Unmarshal(in["rrfK"], &n)
				req.Fusion.K = n
			}
			_, err := coll.Search(ctx, req)
			return check(err)
		case c.Name == "hybrid SQL shape":
			sql := postgres.HybridSQL(true, "3", "collection_id = 1 AND tenant_filter", 10)
			for _, branch := range []string{"v AS (", "k AS ("} {
				rest := sql[strings.Index(sql, branch):]
				if w, l := strings.Index(rest, "tenant_filter"), strings.Index(rest, "LIMIT 10"); w < 0 || l < 0 || w > l {
					return conformance.Fail("branch %s does not apply collection and filter before its limit of 2·top-k", branch)
				}
			}
			return conformance.Pass()
		case strings.HasPrefix(c.Name, "collections: isolation"):
			a, b := ensure(t, s, "team-a"), ensure(t, s, "team-b")
			mustWrite(t, a, docAt("x", "in a", nil))
			mustWrite(t, b, docAt("x", "in b", nil))
			got, err := a.Get(ctx, []string{"x"})
			if err != nil || len(got) != 1 || got[0].Content != "in a" {
				return conformance.Fail("team-a sees %v (%v)", got, err)
			}
			hits, err := a.Search(ctx, store.SearchRequest{Embedding: []float32{1, 0, 0}, TopK: 10})
			if err != nil || len(hits) != 1 || hits[0].Doc.Content != "in a" {
				return conformance.Fail("search in team-a found %d hits (%v)", len(hits), err)
			}
			if n := rows(t, dsn, `SELECT count(*) FROM quarry_documents WHERE id = 'x'`); n != 2 {
				return conformance.Fail("%d rows for id x, want 2", n)
			}
			return conformance.Pass()
		case strings.HasPrefix(c.Name, "collections: metadata"):
			a, b := ensure(t, s, "scope-a"), ensure(t, s, "scope-b")
			mustWrite(t, a, docAt("m", "spoof", map[string]any{"collection_id": "scope-b", "ragId": "scope-b"}))
			na, _ := a.Count(ctx, nil)
			nb, _ := b.Count(ctx, nil)
			if na != 1 || nb != 0 {
				return conformance.Fail("counts a=%d b=%d, want 1 and 0", na, nb)
			}
			return conformance.Pass()
		case strings.HasPrefix(c.Name, "writes:"):
			w := ensure(t, s, "writes")
			mustWrite(t, w, docAt("x", "first", nil))
			before := rows(t, dsn, `SELECT search_id FROM quarry_documents d JOIN quarry_collections c ON c.id = d.collection_id WHERE c.name = 'writes' AND d.id = 'x'`)
			mustWrite(t, w, docAt("x", "second", nil))
			after := rows(t, dsn, `SELECT search_id FROM quarry_documents d JOIN quarry_collections c ON c.id = d.collection_id WHERE c.name = 'writes' AND d.id = 'x'`)
			if before != after {
				return conformance.Fail("search_id changed from %d to %d on upsert", before, after)
			}
			if n, _ := w.Count(ctx, nil); n != 1 {
				return conformance.Fail("%d rows for x", n)
			}
			// An empty batch sends nothing: it succeeds even on a closed store.
			closed, err := postgres.Open(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			closed.Close()
			if err := closed.Upsert(ctx, "writes", nil); err != nil {
				return conformance.Fail("empty batch: %v", err)
			}
			bad := docAt("bad", "bad", nil)
			bad.Embedding = []float32{0, 0, 0}
			if err := w.Upsert(ctx, []*document.Document{docAt("ok", "ok", nil), bad}); err == nil {
				return conformance.Fail("a batch with an invalid vector was accepted")
			}
			if n, _ := w.Count(ctx, nil); n != 1 {
				return conformance.Fail("%d rows after a rejected batch, want 1", n)
			}
			return conformance.Pass()
		case strings.HasPrefix(c.Name, "filters:"):
			coll, err := s.EnsureCollection(ctx, store.CollectionConfig{Name: "filters", Model: embed.ModelInfo{Provider: "p", Model: "m", Dimension: 3},
				Schema: &document.Schema{Fields: []document.Field{{Name: "year", Type: document.TypeInteger, Filterable: true}}}})
			if err != nil {
				t.Fatal(err)
			}
			var raw []json.RawMessage
			json.Unmarshal(in["filters"], &raw)
			var out []conformance.Result
			for i, r := range raw {
				f, err := filter.ParseJSON(string(r))
				if err == nil {
					_, err = coll.Count(ctx, f)
				}
				var fe *filter.Error
				sub := fmt.Sprintf("filter %d", i)
				switch {
				case err == nil:
					out = append(out, conformance.Result{Sub: sub, Err: errors.New("accepted")})
				case !errors.As(err, &fe):
					out = append(out, conformance.Result{Sub: sub, Err: fmt.Errorf("rejected by the server, not before SQL: %v", err)})
				default:
					out = append(out, conformance.Result{Sub: sub})
				}
			}
			return out
		case strings.HasPrefix(c.Name, "legacy deleteBy"):
			coll := ensure(t, s, "deletes")
			d := docAt("g", "guide", nil)
			d.SourceType, d.SourceName = "manual", "guide"
			mustWrite(t, coll, d)
			var raw []map[string]any
			json.Unmarshal(in["deleteBy"], &raw)
			var out []conformance.Result
			for i, m := range raw {
				var conds []filter.Expr
				for _, k := range []string{"sourceType", "sourceName"} {
					if v, ok := m[k]; ok {
						conds = append(conds, filter.Eq(k, v))
					}
				}
				n, err := coll.Delete(ctx, filter.And(conds...))
				sub := fmt.Sprintf("constraint %d", i)
				wantErr := i < 3
				switch {
				case wantErr && err == nil:
					out = append(out, conformance.Result{Sub: sub, Err: fmt.Errorf("accepted, deleted %d", n)})
				case !wantErr && (err != nil || n != 1):
					out = append(out, conformance.Result{Sub: sub, Err: fmt.Errorf("deleted %d (%v), want 1", n, err)})
				default:
					out = append(out, conformance.Result{Sub: sub})
				}
			}
			return out
		}
		return conformance.Fail("no check for this case")
	})
}

func ensure(t *testing.T, s *store.Store, name string) *store.Collection {
	t.Helper()
	c, err := s.EnsureCollection(context.Background(), store.CollectionConfig{Name: name, Model: embed.ModelInfo{Provider: "p", Model: "m", Dimension: 3}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func docAt(id, content string, md map[string]any) *document.Document {
	return &document.Document{ID: id, Content: content, SourceType: "manual", SourceName: "manual", Metadata: md, Embedding: []float32{1, 0, 0}}
}

func mustWrite(t *testing.T, c *store.Collection, docs ...*document.Document) {
	t.Helper()
	if err := c.Upsert(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
}

func rows(t *testing.T, dsn, sql string) int64 {
	t.Helper()
	var n int64
	if err := pool(t, dsn).QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

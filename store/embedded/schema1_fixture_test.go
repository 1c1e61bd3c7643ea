package embedded_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/embed/hash"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/embedded"
)

// schema1Words make the fixture's texts: enough vocabulary that keyword
// and vector searches rank differently.
var schema1Words = strings.Fields(`quarry granite marble slate basalt chisel hammer drill blast crane
	truck haul ledge bench face seam vein dust water pump survey permit safety shift crew`)

// schema1Docs are the chunks of testdata/schema1/quarry.db, a database the
// last Quarry of schema 1 wrote with writeSchema1Fixture: two collections,
// one with a schema of filterable fields, chunks of every metadata type and
// full provenance, one chunk rewritten and one source deleted after the first
// write, so the rows carry updates as well as inserts.
func schema1Docs() map[string][]*document.Document {
	out := map[string][]*document.Document{}
	for ci, name := range []string{"plain", "typed"} {
		for i := range 120 {
			var b strings.Builder
			for j := range 12 + i%17 {
				b.WriteString(schema1Words[(i*7+j*j+ci)%len(schema1Words)])
				b.WriteByte(' ')
			}
			d := document.New(strings.TrimSpace(b.String()))
			d.ID = fmt.Sprintf("%s-%03d", name, i)
			d.SourceType, d.SourceName = document.SourceFile, fmt.Sprintf("site/report-%02d.md", i/8)
			d.Metadata = map[string]any{"n": int64(i), "share": float64(i) / 3, "open": i%3 == 0,
				"crew": []any{fmt.Sprint("c", i%4)}, "note": fmt.Sprintf("ÿ «%d» \t", i)}
			d.Provenance = document.Provenance{Source: d.SourceName, LineStart: i%8*5 + 1, LineEnd: i%8*5 + 5,
				HeadingPath: []string{"Report", fmt.Sprint("Week ", i%8)}, CharStart: i % 8 * 200, CharEnd: i%8*200 + b.Len(),
				ChunkIndex: i % 8, ChunkCount: 8}
			out[name] = append(out[name], d)
		}
	}
	return out
}

func schema1Schema() *document.Schema {
	return &document.Schema{Fields: []document.Field{{Name: "n", Type: document.TypeInteger, Filterable: true},
		{Name: "crew", Type: document.TypeStringList, Filterable: true}}}
}

// writeSchema1Fixture writes the fixture's collections into s: each
// collection's chunks, then chunk 5 rewritten and the chunks of one source
// (112 to 119) deleted. Both the schema-1 build that wrote the fixture and the tests
// that compare against it call it.
func writeSchema1Fixture(ctx context.Context, s *store.Store) error {
	emb, err := hash.New(hash.Config{Dimension: 64})
	if err != nil {
		return err
	}
	for name, docs := range schema1Docs() {
		cfg := store.CollectionConfig{Name: name, Model: emb.Model()}
		if name == "typed" {
			cfg.Schema = schema1Schema()
		}
		c, err := s.EnsureCollection(ctx, cfg)
		if err != nil {
			return err
		}
		texts := make([]string, len(docs))
		for i, d := range docs {
			texts[i] = d.Content
		}
		vecs, err := embed.Batched{Embedder: emb}.Embed(ctx, texts)
		if err != nil {
			return err
		}
		for i := range docs {
			docs[i].Embedding = vecs[i]
		}
		if err := c.Upsert(ctx, docs); err != nil {
			return err
		}
		re := docs[5].Clone()
		re.Content += " rewritten"
		re.Metadata["note"] = "rewritten"
		if err := c.Upsert(ctx, []*document.Document{re}); err != nil {
			return err
		}
		if _, err := c.Delete(ctx, filter.Eq("sourceName", "site/report-14.md")); err != nil {
			return err
		}
	}
	return nil
}

// TestMigrateSchema1 opens the database the last schema-1 build wrote
// (testdata/schema1), which moves every embedding into the vectors table,
// and holds the result to a knowledge base this build writes from the same
// chunks: every row byte for byte, and the same hits in every mode. It does
// so with the fixture's index checkpoints, which stay valid, and without,
// when the indexes are rebuilt from the migrated rows.
func TestMigrateSchema1(t *testing.T) {
	ctx := context.Background()
	freshDir := t.TempDir()
	fresh, err := embedded.Open(ctx, freshDir, embedded.Options{CheckpointRows: -1})
	if err != nil {
		t.Fatal(err)
	}
	fs := store.New(fresh)
	defer fs.Close()
	if err := writeSchema1Fixture(ctx, fs); err != nil {
		t.Fatal(err)
	}
	for _, withIndex := range []bool{true, false} {
		t.Run(fmt.Sprintf("checkpoints=%v", withIndex), func(t *testing.T) {
			dir := t.TempDir()
			copyFile(t, filepath.Join("testdata", "schema1", embedded.DBFile), filepath.Join(dir, embedded.DBFile))
			if withIndex {
				if err := os.CopyFS(filepath.Join(dir, "index"), os.DirFS(filepath.Join("testdata", "schema1", "index"))); err != nil {
					t.Fatal(err)
				}
			}
			for reopen := range 2 { // the second open finds schema 2 and leaves it
				bk, err := embedded.Open(ctx, dir, embedded.Options{CheckpointRows: -1})
				if err != nil {
					t.Fatalf("open %d: %v", reopen, err)
				}
				s := store.New(bk)
				for name := range schema1Docs() {
					got, err := bk.Scan(ctx, name, "", 1000)
					if err != nil {
						t.Fatal(err)
					}
					want, err := fresh.Scan(ctx, name, "", 1000)
					if err != nil {
						t.Fatal(err)
					}
					if len(got) != 112 || len(got) != len(want) {
						t.Fatalf("%s: %d rows after migrating, %d written fresh, want 112", name, len(got), len(want))
					}
					for i := range want {
						if !reflect.DeepEqual(got[i], want[i]) {
							t.Errorf("%s: row %d after migrating\n%+v\nwritten fresh\n%+v", name, i, got[i], want[i])
						}
					}
					compareSearches(t, ctx, s, fs, name)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// compareSearches runs the same searches on two stores' collection name and
// requires the same hits.
func compareSearches(t *testing.T, ctx context.Context, a, b *store.Store, name string) {
	t.Helper()
	emb, err := hash.New(hash.Config{Dimension: 64})
	if err != nil {
		t.Fatal(err)
	}
	ca, err := a.Collection(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := b.Collection(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"granite seam", "safety crew shift", "water pump rewritten", "blast permit survey"} {
		qv, err := emb.Embed(ctx, []string{q})
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range []store.Mode{store.ModeKeyword, store.ModeVector, store.ModeHybrid} {
			for _, vectors := range []bool{false, true} {
				req := store.SearchRequest{Mode: mode, TopK: 8, Query: q, Embedding: qv[0], Vectors: vectors}
				if name == "typed" {
					req.Filter = filter.ContainsAny("crew", "c1", "c2")
				}
				ha, err := ca.Search(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				hb, err := cb.Search(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				ga, gb := goldenHits(t, ha), goldenHits(t, hb)
				if len(ga) == 0 || !slices.Equal(ga, gb) {
					t.Errorf("%s %s %q vectors=%v: migrated %v, fresh %v", name, mode, q, vectors, ga, gb)
				}
			}
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

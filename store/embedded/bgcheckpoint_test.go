package embedded_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/embedded"
)

func journalRows(t testing.TB, dir string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, embedded.DBFile)+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM journal`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// apiWrites upserts n documents in batches of batch, as a server's add
// endpoint does, with random dim-dimensional vectors.
func apiWrites(t testing.TB, c *store.Collection, n, batch, dim int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < n; i += batch {
		var docs []*document.Document
		for j := i; j < min(n, i+batch); j++ {
			d := document.New(fmt.Sprintf("note %d about parcels and refunds", j))
			d.ID = fmt.Sprintf("n%06d", j)
			v := make([]float32, dim)
			for k := range v {
				v[k] = rng.Float32() - 0.5
			}
			d.Embedding = v
			docs = append(docs, d)
		}
		if err := c.Upsert(context.Background(), docs); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBackgroundCheckpoints: a store taking only small writes, with no
// ingestion and no Close, checkpoints by itself once its journal grows, so
// another process opening it replays little.
func TestBackgroundCheckpoints(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b, err := embedded.Open(ctx, dir, embedded.Options{CheckpointRows: 100, CheckpointAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c, err := store.New(b).CreateCollection(ctx, store.CollectionConfig{Name: "api", Model: embed.ModelInfo{Provider: "p", Model: "m", Dimension: 8}})
	if err != nil {
		t.Fatal(err)
	}
	apiWrites(t, c, 400, 8, 8)
	deadline := time.Now().Add(20 * time.Second)
	for journalRows(t, dir) >= 100 {
		if time.Now().After(deadline) {
			t.Fatalf("the journal still holds %d ids with a threshold of 100", journalRows(t, dir))
		}
		time.Sleep(100 * time.Millisecond)
	}
	// An unsaved write is checkpointed after CheckpointAge even below the
	// row threshold.
	dir2 := t.TempDir()
	b2, err := embedded.Open(ctx, dir2, embedded.Options{CheckpointRows: 1 << 20, CheckpointAge: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	c2, err := store.New(b2).CreateCollection(ctx, store.CollectionConfig{Name: "api", Model: embed.ModelInfo{Provider: "p", Model: "m", Dimension: 8}})
	if err != nil {
		t.Fatal(err)
	}
	apiWrites(t, c2, 5, 5, 8)
	deadline = time.Now().Add(20 * time.Second)
	for journalRows(t, dir2) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("a write older than CheckpointAge was not checkpointed")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// BenchmarkReopenAfterAPIWrites times a second process's first search on
// a store that took 20,000 documents in adds of 8 (384-d vectors) and was
// never closed, with background checkpoints and without. Run it with
// -benchtime 1x: the reader's Close checkpoints, so later iterations of a
// run would open a saved store.
func BenchmarkReopenAfterAPIWrites(b *testing.B) {
	for _, tc := range []struct {
		name string
		rows int
	}{{"background", 0}, {"off", -1}} {
		b.Run(tc.name, func(b *testing.B) {
			ctx := context.Background()
			dir := b.TempDir()
			w, err := embedded.Open(ctx, dir, embedded.Options{CheckpointRows: tc.rows})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			c, err := store.New(w).CreateCollection(ctx, store.CollectionConfig{Name: "api", Model: embed.ModelInfo{Provider: "p", Model: "m", Dimension: 384}})
			if err != nil {
				b.Fatal(err)
			}
			apiWrites(b, c, 20000, 8, 384)
			time.Sleep(2 * time.Second) // a poll of the checkpointer
			journal := journalRows(b, dir)
			b.ResetTimer()
			for range b.N {
				r, err := embedded.Open(ctx, dir, embedded.Options{CheckpointRows: -1})
				if err != nil {
					b.Fatal(err)
				}
				rc, err := store.New(r).Collection(ctx, "api")
				if err != nil {
					b.Fatal(err)
				}
				if _, err := rc.Search(ctx, store.SearchRequest{Mode: store.ModeKeyword, Query: "parcels", TopK: 5}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				r.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(journal), "journal-ids")
		})
	}
}

package mongodb_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/mongodb"
	"github.com/quarry-rag/quarry/store/mongodb/mongotest"
	"github.com/quarry-rag/quarry/store/storetest"
)

func open(t *testing.T, url string) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) *store.Store {
		s, err := store.Open(context.Background(), mongotest.New(t).URI(""))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestOpenRefusesBadURLs(t *testing.T) {
	for _, u := range []string{
		"mongodb://h:1/?prefix=UPPER",
		"mongodb://h:1/?prefix=a_b",
		"mongodb://h:1/?hybrid=magic",
		"mongodb://h:1/bad.db",
		"http://h:1",
	} {
		if _, err := mongodb.Open(context.Background(), u); err == nil {
			t.Errorf("%s: opened", u)
		}
	}
}

func collection(t *testing.T, s *store.Store, name string) *store.Collection {
	t.Helper()
	schema := &document.Schema{Fields: []document.Field{{Name: "year", Type: document.TypeInteger, Filterable: true}}}
	c, err := s.CreateCollection(context.Background(), store.CollectionConfig{Name: name, Schema: schema,
		Model: embed.ModelInfo{Provider: "p", Model: "m", Dimension: 3}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func fruit() []*document.Document {
	words := []string{"refund policy gift", "gift cards", "refund of gift cards refund", "shipping times", "returns and refund", "store hours"}
	var docs []*document.Document
	for i, w := range words {
		docs = append(docs, &document.Document{ID: fmt.Sprintf("d%d", i), Content: w, SourceType: "file", SourceName: "n.md",
			Metadata: map[string]any{"year": int64(2020 + i)}, Embedding: []float32{float32(i) + 0.5, 1, float32(6 - i)}})
	}
	return docs
}

// TestBatchesAreTransactions: an upsert and a delete each commit one
// transaction, and the search indexes are created with the collection.
func TestBatchesAreTransactions(t *testing.T) {
	srv := mongotest.New(t)
	ctx := context.Background()
	c := collection(t, open(t, srv.URI("")), "docs")
	if n := srv.Calls()["createSearchIndexes"]; n != 1 {
		t.Errorf("createSearchIndexes sent %d times", n)
	}
	before := srv.Calls()["commitTransaction"]
	if err := c.Upsert(ctx, fruit()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Delete(ctx, filter.Eq("year", 2021)); err != nil {
		t.Fatal(err)
	}
	if n := srv.Calls()["commitTransaction"] - before; n != 2 {
		t.Errorf("%d commits for an upsert and a delete", n)
	}
}

// TestNativeHybrid: with hybrid=mongodb a plain hybrid request is one
// aggregate whose $rankFusion merges the vector and text pipelines.
func TestNativeHybrid(t *testing.T) {
	srv := mongotest.New(t)
	ctx := context.Background()
	c := collection(t, open(t, srv.URI("prefix=hyb")), "docs")
	if err := c.Upsert(ctx, fruit()); err != nil {
		t.Fatal(err)
	}
	nc, err := open(t, srv.URI("prefix=hyb&hybrid=mongodb")).Collection(ctx, "docs")
	if err != nil {
		t.Fatal(err)
	}
	before := srv.Calls()["aggregate"]
	hits, err := nc.Search(ctx, store.SearchRequest{Query: "refund gift policy", Embedding: []float32{1, 1, 4}, Mode: store.ModeHybrid, TopK: 3,
		Filter: filter.Gte("year", 2020)})
	if err != nil {
		t.Fatal(err)
	}
	if n := srv.Calls()["aggregate"] - before; n != 1 {
		t.Errorf("native hybrid sent %d aggregates", n)
	}
	if len(hits) != 3 || hits[0].Doc.ID != "d0" {
		t.Errorf("hits %v: want three, d0 (the best keyword match, and near the vector) first", ids(hits))
	}
	for i := 1; i < len(hits); i++ {
		if hits[i].Doc.Score > hits[i-1].Doc.Score {
			t.Errorf("hit %d scores %v after %v", i, hits[i].Doc.Score, hits[i-1].Doc.Score)
		}
	}
}

func ids(hits []store.Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, fmt.Sprintf("%s:%.3f", h.Doc.ID, h.Doc.Score))
	}
	return out
}

// TestKeywordRefusesRawFragments: a raw fragment is an MQL query, which
// vector search applies and Atlas Search cannot, so keyword search says
// so rather than search without it.
func TestKeywordRefusesRawFragments(t *testing.T) {
	ctx := context.Background()
	c := collection(t, open(t, mongotest.New(t).URI("")), "docs")
	if err := c.Upsert(ctx, fruit()); err != nil {
		t.Fatal(err)
	}
	raw := filter.NewRaw(mongodb.Dialect, json.RawMessage(`{"m_year": {"$gte": 2024}}`))
	hits, err := c.Search(ctx, store.SearchRequest{Embedding: []float32{1, 1, 1}, Mode: store.ModeVector, TopK: 10, Filter: raw})
	if err != nil || len(hits) != 2 {
		t.Errorf("vector search with a raw fragment: %v, %v", ids(hits), err)
	}
	if _, err := c.Search(ctx, store.SearchRequest{Query: "refund", Mode: store.ModeKeyword, TopK: 10, Filter: raw}); err == nil || !strings.Contains(err.Error(), "Atlas Search") {
		t.Errorf("keyword search with a raw fragment: %v", err)
	}
}

// TestRefusesPipelinesOutsideTheSpecification: the fake checks every
// pipeline against MongoDB's MQL specifications, so a misspelt stage, a
// missing argument or a wrong type in the store fails its tests.
func TestRefusesPipelinesOutsideTheSpecification(t *testing.T) {
	srv := mongotest.New(t)
	ctx := context.Background()
	client, err := mongo.Connect(options.Client().ApplyURI(srv.URI("")))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Disconnect(ctx)
	coll := client.Database("quarry").Collection("x")
	for _, p := range []bson.A{
		{bson.D{{Key: "$vectorsearch", Value: bson.D{}}}},
		{bson.D{{Key: "$vectorSearch", Value: bson.D{{Key: "index", Value: "v"}, {Key: "path", Value: "e"}, {Key: "limit", Value: "ten"}}}}},
		{bson.D{{Key: "$vectorSearch", Value: bson.D{{Key: "index", Value: "v"}, {Key: "limit", Value: 3}}}}},
		{bson.D{{Key: "$search", Value: bson.D{{Key: "txt", Value: bson.D{{Key: "query", Value: "a"}, {Key: "path", Value: "p"}}}}}}},
		{bson.D{{Key: "$match", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$contains", Value: "x"}}}}}}},
		{bson.D{{Key: "$limit", Value: 1}}, bson.D{{Key: "$search", Value: bson.D{{Key: "exists", Value: bson.D{{Key: "path", Value: "p"}}}}}}},
	} {
		if _, err := coll.Aggregate(ctx, p); err == nil {
			t.Errorf("%v: accepted", p)
		}
		if bad := srv.TakeInvalid(); len(bad) != 1 {
			t.Errorf("%v: invalid %v", p, bad)
		}
	}
}

// TestConcurrentBatchesRetryWriteConflicts: batches written at once into
// one collection conflict at commit, as on a replica set; the driver
// retries the transaction that lost, and every batch lands whole.
func TestConcurrentBatchesRetryWriteConflicts(t *testing.T) {
	srv := mongotest.New(t)
	ctx := context.Background()
	c := collection(t, open(t, srv.URI("")), "docs")
	const writers, batches = 4, 10
	errs := make(chan error, writers)
	for w := range writers {
		go func() {
			var err error
			for b := 0; b < batches && err == nil; b++ {
				var docs []*document.Document
				for i := range 3 {
					docs = append(docs, &document.Document{ID: fmt.Sprintf("w%d-b%d-%d", w, b, i), Content: "text", SourceType: "manual",
						SourceName: fmt.Sprintf("w%d", w), Embedding: []float32{1, 0, 0}})
				}
				err = c.Upsert(ctx, docs)
			}
			errs <- err
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n, err := c.Count(ctx, nil); err != nil || n != writers*batches*3 {
		t.Errorf("count %d, %v; want %d", n, err, writers*batches*3)
	}
	if commits := srv.Calls()["commitTransaction"]; commits < writers*batches {
		t.Errorf("%d commits for %d batches", commits, writers*batches)
	}
	t.Logf("%d commits, %d conflicts retried", srv.Calls()["commitTransaction"], srv.Calls()["commitTransaction"]-writers*batches)
}

// TestNoGoroutinesLeft: closing the store stops the driver's monitors and
// pools, and closing the fake ends its connections: nothing is left
// running.
func TestNoGoroutinesLeft(t *testing.T) {
	before := runtime.NumGoroutine()
	srv := mongotest.New(t)
	ctx := context.Background()
	s, err := store.Open(ctx, srv.URI(""))
	if err != nil {
		t.Fatal(err)
	}
	c := collection(t, s, "docs")
	if err := c.Upsert(ctx, fruit()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Search(ctx, store.SearchRequest{Query: "refund", Embedding: []float32{1, 1, 1}, Mode: store.ModeHybrid, TopK: 3}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines before, %d after:\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}

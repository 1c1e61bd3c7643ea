package memory_test

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
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/internal/conformance"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/memory"
	"github.com/quarry-rag/quarry/store/storetest"
)

func TestStoreConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) *store.Store { return store.New(memory.New()) })
}

func TestOpenByURL(t *testing.T) {
	s, err := store.Open(context.Background(), "memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := store.Open(context.Background(), "memory:/some/dir"); err == nil {
		t.Error("memory store accepted a location")
	}
	if _, err := store.Open(context.Background(), "nosuch://x"); err == nil || !strings.Contains(err.Error(), "memory") {
		t.Errorf("unknown scheme: %v", err)
	}
}

func TestClosedStore(t *testing.T) {
	s := store.New(memory.New())
	c, err := s.CreateCollection(context.Background(), store.CollectionConfig{Name: "x", Model: storetest.Model(2)})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := c.Count(context.Background(), nil); !errors.Is(err, store.ErrClosed) {
		t.Errorf("count on a closed store: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
}

// TestSeedConformance runs the seed cases of the memory store and search
// request areas.
func TestSeedConformance(t *testing.T) {
	cases := conformance.Load(t, "neuron.memory_store", "neuron.search_request")
	diffs := conformance.LoadDifferences(t, filepath.Join("testdata", "conformance_differences.json"))
	conformance.Run(t, cases, diffs, func(c conformance.Case) []conformance.Result {
		if c.Area == "neuron.search_request" {
			return searchRequestCase(c)
		}
		return memoryStoreCase(c)
	})
}

func searchRequestCase(c conformance.Case) []conformance.Result {
	var in struct {
		Embedding json.RawMessage `json:"embedding"`
		TopK      json.RawMessage `json:"topK"`
	}
	var exp struct {
		Error *conformance.ExpectedError `json:"error"`
	}
	if err := c.Decode(&in, &exp); err != nil {
		return conformance.Of(err)
	}
	var d document.Document
	err := json.Unmarshal([]byte(fmt.Sprintf(`{"embedding":%s}`, in.Embedding)), &d)
	if err != nil {
		if exp.Error == nil {
			return conformance.Of(err)
		}
		if !strings.Contains(err.Error(), "numeric values only") {
			return conformance.Fail("message %q", err)
		}
		return conformance.Pass()
	}
	req := store.SearchRequest{Embedding: d.Embedding}
	switch string(in.TopK) {
	case "":
	case `"MIN_INT"`:
		req.TopK = math.MinInt
	default:
		if err := json.Unmarshal(in.TopK, &req.TopK); err != nil {
			return conformance.Of(err)
		}
	}
	coll := store.New(memory.New())
	defer coll.Close()
	col, err := coll.CreateCollection(context.Background(), store.CollectionConfig{Name: "seed", Model: storetest.Model(len(d.Embedding))})
	if err != nil {
		return conformance.Of(err)
	}
	norm, err := col.Normalize(req)
	if exp.Error != nil {
		if err == nil || !errors.Is(err, store.ErrInvalidRequest) || !strings.Contains(err.Error(), "top-k") {
			return conformance.Fail("want a top-k error, got %v", err)
		}
		return conformance.Pass()
	}
	if err != nil {
		return conformance.Of(err)
	}
	if norm.Filter != nil || norm.TopK != store.DefaultTopK {
		return conformance.Fail("defaults: filter %v top-k %d", norm.Filter, norm.TopK)
	}
	return conformance.Pass()
}

func memoryStoreCase(c conformance.Case) []conformance.Result {
	var in struct {
		TopK        int               `json:"topK"`
		Schema      json.RawMessage   `json:"schema"`
		Add         []json.RawMessage `json:"add"`
		AddDocument json.RawMessage   `json:"addDocument"`
		Query       []float32         `json:"query"`
		Queries     []struct {
			Q    []float32 `json:"q"`
			TopK int       `json:"topK"`
		} `json:"queries"`
		Filters json.RawMessage `json:"filters"`
		Steps   []struct {
			Delete json.RawMessage `json:"delete"`
			Search []float32       `json:"search"`
		} `json:"steps"`
	}
	var exp struct {
		Contents json.RawMessage            `json:"contents"`
		Scores   []float64                  `json:"scores"`
		Error    *conformance.ExpectedError `json:"error"`
	}
	if err := c.Decode(&in, &exp); err != nil {
		return conformance.Of(err)
	}
	coll := newCollectionNoT(in.Schema, 2)
	if coll == nil {
		return conformance.Fail("cannot create collection")
	}
	ctx := context.Background()
	if in.AddDocument != nil {
		var d document.Document
		if err := json.Unmarshal(in.AddDocument, &d); err != nil {
			return conformance.Of(err)
		}
		err := coll.Upsert(ctx, []*document.Document{&d})
		if err == nil || !strings.Contains(err.Error(), d.ID) || !strings.Contains(err.Error(), "embedding") {
			return conformance.Fail("document without embedding: %v", err)
		}
		return conformance.Pass()
	}
	var docs []*document.Document
	for i, raw := range in.Add {
		var parts []json.RawMessage
		if err := json.Unmarshal(raw, &parts); err != nil {
			return conformance.Of(err)
		}
		d := document.New("")
		// Ids run against insertion order, so ties show which rule ordered them.
		d.ID = fmt.Sprintf("doc-%02d", len(in.Add)-i)
		_ = json.Unmarshal(parts[0], &d.Content)
		_ = json.Unmarshal(parts[1], &d.Embedding)
		if len(parts) == 3 {
			v, _ := document.DecodeJSONValue(parts[2])
			d.Metadata = v.(map[string]any)
		}
		if len(parts) == 4 {
			_ = json.Unmarshal(parts[2], &d.SourceType)
			_ = json.Unmarshal(parts[3], &d.SourceName)
		}
		docs = append(docs, d)
	}
	if err := coll.Upsert(ctx, docs); err != nil {
		return conformance.Of(err)
	}
	search := func(q []float32, k int, f filter.Expr) ([]string, []float64, error) {
		hits, err := coll.Search(ctx, store.SearchRequest{Embedding: q, TopK: k, Filter: f})
		var contents []string
		var scores []float64
		for _, h := range hits {
			contents = append(contents, h.Doc.Content)
			scores = append(scores, h.Doc.Score)
		}
		return contents, scores, err
	}
	var got any
	switch {
	case in.Queries != nil:
		var all [][]string
		for _, q := range in.Queries {
			k := q.TopK
			if k == 0 {
				k = in.TopK
			}
			cs, _, err := search(q.Q, k, nil)
			if err != nil {
				return conformance.Of(err)
			}
			all = append(all, cs)
		}
		got = all
	case in.Steps != nil:
		var all [][]string
		for _, st := range in.Steps {
			f, err := filter.ParseJSON(string(st.Delete))
			if err != nil {
				return conformance.Of(err)
			}
			if _, err := coll.Delete(ctx, f); err != nil {
				return conformance.Of(err)
			}
			cs, _, err := search(st.Search, in.TopK, nil)
			if err != nil {
				return conformance.Of(err)
			}
			all = append(all, cs)
		}
		got = all
	default:
		var f filter.Expr
		if in.Filters != nil {
			var err error
			if f, err = filter.ParseJSON(string(in.Filters)); err != nil {
				return conformance.Of(err)
			}
		}
		cs, scores, err := search(in.Query, in.TopK, f)
		if err != nil {
			return conformance.Of(err)
		}
		if cs == nil {
			cs = []string{}
		}
		got = cs
		for i, s := range exp.Scores {
			if math.Abs(scores[i]-s) > 1e-6 {
				return conformance.Fail("score %d = %v, want %v", i, scores[i], s)
			}
		}
	}
	gotJSON, _ := json.Marshal(got)
	var want any
	_ = json.Unmarshal(exp.Contents, &want)
	wantJSON, _ := json.Marshal(want)
	if string(gotJSON) != string(wantJSON) {
		return conformance.Fail("contents %s, want %s", gotJSON, wantJSON)
	}
	return conformance.Pass()
}

func newCollectionNoT(schema json.RawMessage, dim int) *store.Collection {
	var sch *document.Schema
	if schema != nil {
		var err error
		if sch, err = document.ParseSchema(schema); err != nil {
			return nil
		}
	}
	s := store.New(memory.New())
	c, err := s.CreateCollection(context.Background(), store.CollectionConfig{Name: "seed", Schema: sch, Model: storetest.Model(dim)})
	if err != nil {
		return nil
	}
	return c
}

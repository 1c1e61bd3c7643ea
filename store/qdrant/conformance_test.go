package qdrant

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/internal/conformance"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/qdrant/qdranttest"
)

// storeNames maps the store names of the cases' raw fragments to Quarry's
// dialects.
var storeNames = map[string]string{"QdrantVectorStore": Dialect, "WeaviateVectorStore": "weaviate"}

// conformanceSchema declares the fields the cases filter on.
const conformanceSchema = `{"fields":[
 {"name":"a","type":"integer","filterable":true},
 {"name":"b","type":"integer","filterable":true},
 {"name":"lang","type":"string","filterable":true,"required":true},
 {"name":"draft","type":"boolean","filterable":true},
 {"name":"year","type":"integer","filterable":true},
 {"name":"price","type":"float","filterable":true}]}`

// TestCompilerConformance runs the neuron.compilers cases for Qdrant: the
// filter a portable expression compiles to, and the request a delete by
// filter sends. The other compilers' cases are for their own stores.
func TestCompilerConformance(t *testing.T) {
	schema, err := document.ParseSchema([]byte(conformanceSchema))
	if err != nil {
		t.Fatal(err)
	}
	var cases []conformance.Case
	for _, c := range conformance.Load(t, "neuron.compilers") {
		// Some cases run one filter through several compilers.
		var in struct {
			Compiler json.RawMessage `json:"compiler"`
			Store    string          `json:"store"`
		}
		if err := c.Decode(&in, nil); err != nil {
			t.Fatal(err)
		}
		if string(in.Compiler) == `"`+Dialect+`"` || in.Store == Dialect {
			cases = append(cases, c)
		}
	}
	if len(cases) == 0 {
		t.Fatal("no qdrant cases")
	}
	diffs := conformance.LoadDifferences(t, filepath.Join("testdata", "conformance_differences.json"))
	conformance.Run(t, cases, diffs, func(c conformance.Case) []conformance.Result {
		var in struct {
			Filter json.RawMessage `json:"filter"`
			Delete json.RawMessage `json:"delete"`
		}
		if err := c.Decode(&in, nil); err != nil {
			return conformance.Of(err)
		}
		if in.Delete != nil {
			return conformance.Of(deleteCase(t, c, schema, in.Delete))
		}
		var exp struct {
			Error *conformance.ExpectedError `json:"error"`
		}
		if err := c.Decode(nil, &exp); err != nil {
			return conformance.Of(err)
		}
		got, err := compileCase(in.Filter, schema)
		if exp.Error != nil {
			if err == nil {
				return conformance.Fail("compiled to %s, want an error like %q", got, exp.Error.Message)
			}
			// Quarry writes its own message; it must name both stores.
			if !strings.Contains(err.Error(), "weaviate") || !strings.Contains(err.Error(), Dialect) {
				return conformance.Fail("message %q names neither the fragment's store nor this one", err)
			}
			return conformance.Pass()
		}
		if err != nil {
			return conformance.Of(err)
		}
		return conformance.Of(conformance.SameJSON(got, c.Expected))
	})
}

// compileCase parses a case's filter, with its raw fragments' store names
// mapped, and compiles it as a request's filter would be.
func compileCase(raw json.RawMessage, schema *document.Schema) ([]byte, error) {
	src := string(raw)
	for from, to := range storeNames {
		src = strings.ReplaceAll(src, `"`+from+`"`, `"`+to+`"`)
	}
	e, err := filter.ParseJSON(src)
	if err != nil {
		return nil, err
	}
	if err := filter.Validate(e, schema); err != nil {
		return nil, err
	}
	c, err := compileFilter(e, schema)
	if err != nil {
		return nil, err
	}
	return json.Marshal(cond{"must": c.must})
}

// deleteCase deletes by the case's filter through a fake and compares the
// request that did the deleting with the expected one.
func deleteCase(t *testing.T, c conformance.Case, schema *document.Schema, raw json.RawMessage) error {
	var exp struct {
		POST string          `json:"POST"`
		Body json.RawMessage `json:"body"`
	}
	if err := c.Decode(nil, &exp); err != nil {
		return err
	}
	srv, err := qdranttest.New()
	if err != nil {
		return err
	}
	defer srv.Close()
	ctx := context.Background()
	b, err := Open(ctx, srv.StoreURL("prefix=conf"))
	if err != nil {
		return err
	}
	defer b.Close()
	s := store.New(b)
	cfg := store.CollectionConfig{Name: "docs", Model: embed.ModelInfo{Provider: "p", Model: "m", Dimension: 2}, Schema: schema}
	coll, err := s.CreateCollection(ctx, cfg)
	if err != nil {
		return err
	}
	doc := &document.Document{ID: "d", Content: "x", Embedding: []float32{1, 0}, SourceType: "file", SourceName: "gone.txt"}
	if err := coll.Upsert(ctx, []*document.Document{doc}); err != nil {
		return err
	}
	e, err := filter.ParseJSON(string(raw))
	if err != nil {
		return err
	}
	srv.Record = true
	n, err := coll.Delete(ctx, e)
	srv.Record = false
	if err != nil || n != 1 {
		return fmt.Errorf("deleted %d (%v), want 1", n, err)
	}
	if bad := srv.Invalid(); len(bad) > 0 {
		return fmt.Errorf("invalid requests: %v", bad)
	}
	want := strings.Replace(exp.POST, "{collectionUrl}", "/collections/conf_docs", 1)
	last := srv.Ops[len(srv.Ops)-1]
	// The chunk delete keeps the expected filter after its kind condition.
	var batch struct {
		Operations []struct {
			Delete struct {
				Filter struct {
					Must []json.RawMessage `json:"must"`
				} `json:"filter"`
			} `json:"delete"`
		} `json:"operations"`
	}
	if err := json.Unmarshal(last.Body, &batch); err == nil && len(batch.Operations) > 0 {
		must := batch.Operations[len(batch.Operations)-1].Delete.Filter.Must
		if len(must) > 0 {
			got, _ := json.Marshal(map[string]any{"filter": map[string]any{"must": must[1:]}})
			if err := conformance.SameJSON(got, exp.Body); err != nil {
				t.Errorf("%s: the chunk delete's filter after its kind: %v", c.Name, err)
			}
		}
	}
	if got := last.Method + " " + last.Path; got != "POST "+want {
		return fmt.Errorf("deleted with %s %s, want POST %s", got, last.Body, want)
	}
	return conformance.SameJSON(last.Body, exp.Body)
}

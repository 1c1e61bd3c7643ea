package opensearch

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/internal/conformance"
)

// storeNames maps the store names of the cases' raw fragments to Quarry's
// dialects.
var storeNames = map[string]string{
	"ElasticsearchVectorStore": DialectElasticsearch,
	"OpenSearchVectorStore":    DialectOpenSearch,
	"VectorStoreInterface":     "any",
}

// conformanceSchema declares the fields the cases filter on.
const conformanceSchema = `{"fields":[
 {"name":"a","type":"integer","filterable":true},
 {"name":"b","type":"integer","filterable":true},
 {"name":"lang","type":"string","filterable":true,"required":true},
 {"name":"tenant","type":"string","filterable":true},
 {"name":"draft","type":"boolean","filterable":true},
 {"name":"year","type":"integer","filterable":true},
 {"name":"price","type":"float","filterable":true},
 {"name":"tags","type":"string[]","filterable":true}]}`

// TestCompilerConformance runs the neuron.compilers cases for
// Elasticsearch and OpenSearch, each case on every dialect it names.
func TestCompilerConformance(t *testing.T) {
	schema, err := document.ParseSchema([]byte(conformanceSchema))
	if err != nil {
		t.Fatal(err)
	}
	dialects := func(c conformance.Case) []string {
		var in struct {
			Compiler json.RawMessage `json:"compiler"`
		}
		if err := c.Decode(&in, nil); err != nil {
			t.Fatal(err)
		}
		var list []string
		if json.Unmarshal(in.Compiler, &list) != nil {
			var one string
			json.Unmarshal(in.Compiler, &one)
			list = []string{one}
		}
		return slices.DeleteFunc(list, func(d string) bool { return d != DialectOpenSearch && d != DialectElasticsearch })
	}
	var cases []conformance.Case
	for _, c := range conformance.Load(t, "neuron.compilers") {
		if len(dialects(c)) > 0 {
			cases = append(cases, c)
		}
	}
	if len(cases) == 0 {
		t.Fatal("no elasticsearch or opensearch cases")
	}
	diffs := conformance.LoadDifferences(t, filepath.Join("testdata", "conformance_differences.json"))
	conformance.Run(t, cases, diffs, func(c conformance.Case) []conformance.Result {
		var in struct {
			Filter json.RawMessage `json:"filter"`
		}
		var exp struct {
			Query json.RawMessage            `json:"query"`
			Error *conformance.ExpectedError `json:"error"`
		}
		if err := c.Decode(&in, &exp); err != nil {
			return conformance.Of(err)
		}
		var out []conformance.Result
		for _, d := range dialects(c) {
			got, err := compileCase(in.Filter, schema, d)
			var res error
			switch {
			case exp.Error != nil && err == nil:
				res = fmt.Errorf("compiled to %s, want an error like %q", got, exp.Error.Message)
			case exp.Error != nil && !strings.Contains(err.Error(), "this store is "+d):
				// Quarry writes its own message; it must name this store.
				res = fmt.Errorf("message %q does not name %s", err, d)
			case exp.Error == nil && err != nil:
				res = err
			case exp.Error == nil:
				res = conformance.SameJSON(got, exp.Query)
			}
			out = append(out, conformance.Result{Sub: d, Err: res})
		}
		return out
	})
}

// compileCase parses a case's filter, with its raw fragments' store names
// mapped, and compiles it for one dialect.
func compileCase(raw json.RawMessage, schema *document.Schema, dialect string) ([]byte, error) {
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
	c, err := compileFilter(e, schema, dialect)
	if err != nil {
		return nil, err
	}
	return json.Marshal(c.query())
}

//go:build ignore

// Prune writes the part of OpenSearch's or Elasticsearch's OpenAPI
// document that Quarry's opensearch store uses: the paths below, with
// every component they reach.
//
// For OpenSearch the input is the single-file document that the
// opensearch-project/opensearch-api-specification repository builds from
// its multi-file spec:
//
//	npm ci --ignore-scripts && npm run merge -- --opensearch-version 3.5.0 -o /tmp/os.yaml
//	go run prune.go -in /tmp/os.yaml -out openapi.json
//
// For Elasticsearch it is output/openapi/elasticsearch-serverless-openapi.json
// of the elastic/elasticsearch-specification repository:
//
//	go run prune.go -engine elasticsearch -in elasticsearch-serverless-openapi.json -out elasticsearch.json
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// paths are the endpoints the store calls; all their methods are kept.
var paths = []string{
	"/",
	"/{index}",
	"/{index}/_mapping",
	"/_bulk",
	"/{index}/_bulk",
	"/{index}/_search",
	"/{index}/_msearch",
	"/{index}/_count",
	"/{index}/_delete_by_query",
	"/{index}/_mget",
	"/{index}/_refresh",
}

// openSearchOnly are the endpoints only the OpenSearch flavour calls.
var openSearchOnly = []string{"/_search/pipeline/{id}"}

func main() {
	in := flag.String("in", "", "the merged OpenAPI document (YAML)")
	out := flag.String("out", "openapi.json", "where to write the pruned document")
	engine := flag.String("engine", "opensearch", "opensearch or elasticsearch")
	flag.Parse()
	if *engine == "opensearch" {
		paths = append(paths, openSearchOnly...)
	}
	b, err := os.ReadFile(*in)
	if err != nil {
		log.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		log.Fatal(err)
	}
	all := doc["paths"].(map[string]any)
	kept := map[string]any{}
	for _, p := range paths {
		item, ok := all[p]
		if !ok {
			log.Fatalf("the document has no path %s", p)
		}
		kept[p] = item
	}
	comps := doc["components"].(map[string]any)
	reached := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				if s, ok := c.(string); ok && k == "$ref" {
					ref := strings.TrimPrefix(s, "#/components/")
					if reached[ref] {
						continue
					}
					reached[ref] = true
					kind, name, _ := strings.Cut(ref, "/")
					walk(comps[kind].(map[string]any)[name])
					continue
				}
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(kept)
	pruned := map[string]any{}
	var refs []string
	for ref := range reached {
		refs = append(refs, ref)
	}
	sort.Strings(refs)
	for _, ref := range refs {
		kind, name, _ := strings.Cut(ref, "/")
		m, _ := pruned[kind].(map[string]any)
		if m == nil {
			m = map[string]any{}
			pruned[kind] = m
		}
		m[name] = comps[kind].(map[string]any)[name]
	}
	doc["paths"] = kept
	doc["components"] = pruned
	j, err := json.MarshalIndent(doc, "", " ")
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, append(j, '\n'), 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d paths, %d components, %d bytes\n", len(kept), len(refs), len(j))
}

// Package opensearch is Quarry's store on OpenSearch and Elasticsearch,
// whose REST APIs agree on everything Quarry sends but the vector parts.
//
// This package is being built: today it holds the filter compiler, which
// turns portable filters into the engines' query DSL (the same clauses
// for both), and opensearchtest the engines' published API documents.
package opensearch

// The dialects: the name a raw filter fragment is tagged with to run on
// each engine, and nowhere else.
const (
	DialectOpenSearch    = "opensearch"
	DialectElasticsearch = "elasticsearch"
)

// Fields of every chunk that filters may name besides the schema's.
const (
	keySType = "sourceType"
	keySName = "sourceName"
)

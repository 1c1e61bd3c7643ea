package postgres

// HybridSQL exposes the hybrid statement to the conformance test.
var HybridSQL = hybridSQL
var KeywordSQL = keywordSQL

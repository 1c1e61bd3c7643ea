package postgres

// HybridSQL exposes the hybrid statement to the conformance test.
var HybridSQL = hybridSQL
var KeywordSQL = keywordSQL

// SetCopyThreshold moves the batch size from which writes use COPY.
func SetCopyThreshold(b *Backend, n int) { b.copyMin = n }

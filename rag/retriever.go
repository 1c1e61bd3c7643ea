package rag

import "github.com/quarry-rag/quarry/retrieve"

// RetrieveRequest is what a pipeline asks a retriever for; see
// retrieve.Request.
type RetrieveRequest = retrieve.Request

// Retriever finds passages for a query, best first; see
// retrieve.Retriever.
type Retriever = retrieve.Retriever

// CollectionRetriever searches one collection; see retrieve.Collection.
type CollectionRetriever = retrieve.Collection

package opensearch_test

import (
	"context"
	"fmt"
	_ "github.com/quarry-rag/quarry/store/opensearch"
	"sync/atomic"
	"testing"

	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/opensearch/opensearchtest"
	"github.com/quarry-rag/quarry/store/storetest"
)

// fake starts a fake OpenSearch that fails the test, when it ends, if any
// request or answer did not conform to OpenSearch's OpenAPI document.
func fake(t testing.TB, opts ...opensearchtest.Option) *opensearchtest.Server {
	t.Helper()
	srv, err := opensearchtest.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close()
		for _, msg := range srv.Invalid() {
			t.Errorf("not valid by OpenSearch's OpenAPI document: %s", msg)
		}
	})
	return srv
}

// opener opens stores on srv, each under a prefix of its own so each
// starts empty.
func opener(srv *opensearchtest.Server, query string) func(t testing.TB) *store.Store {
	var n atomic.Int64
	return func(t testing.TB) *store.Store {
		t.Helper()
		q := fmt.Sprintf("prefix=t%d", n.Add(1))
		if query != "" {
			q += "&" + query
		}
		s, err := store.Open(context.Background(), srv.StoreURL(q))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

func TestConformance(t *testing.T) {
	open := opener(fake(t), "")
	storetest.Run(t, func(t *testing.T) *store.Store { return open(t) })
}

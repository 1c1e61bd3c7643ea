package qdrant_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/qdrant"
	"github.com/quarry-rag/quarry/store/qdrant/qdranttest"
	"github.com/quarry-rag/quarry/store/storetest"
)

// fake starts a fake Qdrant that fails the test, when it ends, if any
// request or answer did not conform to Qdrant's OpenAPI document.
func fake(t testing.TB, opts ...qdranttest.Option) *qdranttest.Server {
	t.Helper()
	srv, err := qdranttest.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close()
		for _, msg := range srv.Invalid() {
			t.Errorf("not valid by Qdrant's OpenAPI document: %s", msg)
		}
	})
	return srv
}

// opener opens stores on srv, each under a prefix of its own so each
// starts empty.
func opener(srv *qdranttest.Server, query string) func(t testing.TB) *store.Store {
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

func TestOpenRefusesBadURLs(t *testing.T) {
	for _, u := range []string{
		"qdrant://",
		"qdrant://h:1?prefix=UPPER",
		"qdrant://h:1?hybrid=magic",
		"http://h:1",
	} {
		if _, err := qdrant.Open(context.Background(), u); err == nil {
			t.Errorf("%s: opened", u)
		}
	}
}

// TestAPIKey: the key from QDRANT_API_KEY is sent; without it the server
// refuses, and opening fails.
func TestAPIKey(t *testing.T) {
	srv := fake(t, qdranttest.WithAPIKey("secret"))
	t.Setenv("QDRANT_API_KEY", "")
	if _, err := qdrant.Open(context.Background(), srv.StoreURL("")); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("open without the key: %v", err)
	}
	t.Setenv("QDRANT_API_KEY", "secret")
	b, err := qdrant.Open(context.Background(), srv.StoreURL(""))
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
}

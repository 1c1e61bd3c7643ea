package chroma_test

import (
	"context"
	"testing"

	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/chroma"
	"github.com/quarry-rag/quarry/store/chroma/chromatest"
	"github.com/quarry-rag/quarry/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) *store.Store {
		s, err := store.Open(context.Background(), chromatest.New(t).StoreURL(""))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestOpenRefusesBadURLs(t *testing.T) {
	for _, u := range []string{
		"chroma://",
		"chroma://h:1?prefix=UPPER",
		"chroma://h:1?prefix=a_b",
		"chroma://h:1?tenant=a/b",
		"chroma://h:1?api_key=k",
		"http://h:1",
	} {
		if _, err := chroma.Open(context.Background(), u); err == nil {
			t.Errorf("%s: opened", u)
		}
	}
}

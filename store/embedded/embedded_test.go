package embedded_test

import (
	"context"
	"testing"

	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/embedded"
	"github.com/quarry-rag/quarry/store/storetest"
)

func TestStoreConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) *store.Store {
		b, err := embedded.Open(context.Background(), t.TempDir(), embedded.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return store.New(b)
	})
}

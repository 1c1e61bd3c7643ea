package embedded_test

import (
	"context"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/embedded"
)

// TestSlowLoadBlocksNoOther checks a collection whose first open is slow
// (a long replay) holds up only its own callers: another collection opens
// meanwhile, and two callers of the slow one share its one load.
func TestSlowLoadBlocksNoOther(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b, err := embedded.Open(ctx, dir, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := embed.ModelInfo{Provider: "test", Model: "m", Dimension: 2}
	for _, name := range []string{"slow", "quick"} {
		if err := b.CreateCollection(ctx, store.CollectionConfig{Name: name, Model: m}); err != nil {
			t.Fatal(err)
		}
	}
	b.Close()

	b, err = embedded.Open(ctx, dir, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	release := make(chan struct{})
	loads := make(chan string, 4)
	b.SetBeforeLoad(func(name string) {
		loads <- name
		if name == "slow" {
			<-release
		}
	})
	s := store.New(b)
	slow := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := s.Collection(ctx, "slow")
			slow <- err
		}()
	}
	if got := <-loads; got != "slow" {
		t.Fatalf("first load %q", got)
	}
	quick := make(chan error, 1)
	go func() {
		_, err := s.Collection(ctx, "quick")
		quick <- err
	}()
	select {
	case err := <-quick:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("opening a collection waited for another collection's load")
	}
	close(release)
	for range 2 {
		if err := <-slow; err != nil {
			t.Fatal(err)
		}
	}
	close(loads)
	n := 0
	for name := range loads {
		if name == "slow" {
			n++
		}
	}
	if n != 0 { // the first "slow" was read above
		t.Errorf("the slow collection was loaded %d more times; its callers share one load", n)
	}
}

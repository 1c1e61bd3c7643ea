package quarry

import (
	"context"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/config"
)

// TestCallerSlots: a caller holds at most search.caller_concurrency slots;
// another caller, and trusted callers, are not held back by it.
func TestCallerSlots(t *testing.T) {
	cfg := config.Defaults()
	cfg.Search.CallerConcurrency = 2
	kb := &KB{cfg: cfg}
	ctx := context.Background()
	a := Scope{Owner: "key-a"}
	var held []func()
	for range 2 {
		r, err := kb.hold(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, r)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := kb.hold(short, a); err == nil {
		t.Fatal("a third slot was given to a caller limited to two")
	}
	for _, sc := range []Scope{{Owner: "key-b"}, Developer()} {
		r, err := kb.hold(ctx, sc)
		if err != nil {
			t.Fatalf("%+v waited on another caller's slots: %v", sc, err)
		}
		r()
	}
	held[0]()
	r, err := kb.hold(ctx, a)
	if err != nil {
		t.Fatalf("a released slot was not given again: %v", err)
	}
	r()
	held[1]()
}

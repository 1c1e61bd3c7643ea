package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/store"
)

// testThreads checks conversation threads: appends number turns from 1 in
// order, data round-trips byte for byte, limits keep the newest turns,
// threads are independent, concurrent appends never collide, and a deleted
// thread is gone.
func testThreads(t *testing.T, s *store.Store) {
	ts, err := s.Threads()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Turns(ctx(t), "nope", 0); !errors.Is(err, store.ErrThreadNotFound) {
		t.Errorf("unknown thread: %v", err)
	}
	if err := ts.AppendTurns(ctx(t), "has space", []store.Turn{{Role: "user", Content: "x"}}); !errors.Is(err, store.ErrInvalidRequest) {
		t.Errorf("bad thread id accepted: %v", err)
	}
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	data := json.RawMessage(`{"citations":[{"n":1,"source":"a.md"}], "z": 1}`)
	if err := ts.AppendTurns(ctx(t), "t-1", []store.Turn{
		{Seq: 99, Role: "user", Content: "What is a refund?", Created: base},
		{Role: "assistant", Content: "Money back [1].", Data: data, Created: base.Add(time.Second)},
	}); err != nil {
		t.Fatal(err)
	}
	if err := ts.AppendTurns(ctx(t), "t-2", []store.Turn{{Role: "user", Content: "other", Created: base}}); err != nil {
		t.Fatal(err)
	}
	if err := ts.AppendTurns(ctx(t), "t-1", []store.Turn{{Role: "user", Content: "And gift cards?", Created: base.Add(2 * time.Second)}}); err != nil {
		t.Fatal(err)
	}
	got, err := ts.Turns(ctx(t), "t-1", 0)
	if err != nil || len(got) != 3 {
		t.Fatalf("turns: %v %v", got, err)
	}
	if ids, err := ts.ThreadIDs(ctx(t)); err != nil || fmt.Sprint(ids) != "[t-1 t-2]" {
		t.Errorf("thread ids: %v %v, want [t-1 t-2]", ids, err)
	}
	for i, want := range []string{"What is a refund?", "Money back [1].", "And gift cards?"} {
		if got[i].Seq != i+1 || got[i].Content != want {
			t.Errorf("turn %d: %+v", i, got[i])
		}
	}
	if string(got[1].Data) != string(data) || got[0].Data != nil {
		t.Errorf("data: %q and %q", got[1].Data, got[0].Data)
	}
	if got[0].Role != "user" || got[1].Role != "assistant" || !got[1].Created.Equal(base.Add(time.Second)) {
		t.Errorf("roles and times: %+v", got[:2])
	}
	last, err := ts.Turns(ctx(t), "t-1", 2)
	if err != nil || len(last) != 2 || last[0].Seq != 2 || last[1].Seq != 3 {
		t.Errorf("last two turns: %+v %v", last, err)
	}

	// Concurrent appends to one thread keep every turn, numbered 1..n.
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 5 {
				turn := store.Turn{Role: "user", Content: fmt.Sprintf("w%d-%d", w, i), Created: base}
				if err := ts.AppendTurns(ctx(t), "busy", []store.Turn{turn}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	busy, err := ts.Turns(ctx(t), "busy", 0)
	if err != nil || len(busy) != 20 {
		t.Fatalf("concurrent appends: %d turns, %v", len(busy), err)
	}
	for i, turn := range busy {
		if turn.Seq != i+1 {
			t.Errorf("turn %d has seq %d", i, turn.Seq)
		}
	}

	if err := ts.DeleteThread(ctx(t), "t-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Turns(ctx(t), "t-1", 0); !errors.Is(err, store.ErrThreadNotFound) {
		t.Errorf("deleted thread: %v", err)
	}
	if other, err := ts.Turns(ctx(t), "t-2", 0); err != nil || len(other) != 1 {
		t.Errorf("deleting t-1 touched t-2: %v %v", other, err)
	}
	if err := ts.DeleteThread(ctx(t), "never-was"); err != nil {
		t.Errorf("deleting an unknown thread: %v", err)
	}
}

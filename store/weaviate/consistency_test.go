package weaviate

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"testing"
)

// TestWritesAskAllReplicasFirst: on a replicated class a write asks for
// ALL, so the search after it sees it on whichever replica answers, and
// falls back to the configured level only when ALL fails.
func TestWritesAskAllReplicasFirst(t *testing.T) {
	down := errors.New("broadcast: cannot reach enough replicas")
	tests := []struct {
		name     string
		opts     Options
		failAll  bool
		want     []string
		wantFail bool
	}{
		{"one replica", Options{Replicas: 1, Consistency: "QUORUM"}, false, []string{"QUORUM"}, false},
		{"replicated, all up", Options{Replicas: 3, Consistency: "QUORUM"}, false, []string{"ALL"}, false},
		{"replicated, a replica down", Options{Replicas: 3, Consistency: "QUORUM"}, true, []string{"ALL", "QUORUM"}, false},
		{"level ONE falls back to ONE", Options{Replicas: 2, Consistency: "ONE"}, true, []string{"ALL", "ONE"}, false},
		{"configured ALL is tried once", Options{Replicas: 3, Consistency: "ALL"}, true, []string{"ALL"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &Backend{opts: tt.opts}
			var got []string
			err := b.writeAll(context.Background(), func(q url.Values) error {
				level := q.Get("consistency_level")
				got = append(got, level)
				if tt.failAll && level == "ALL" {
					return down
				}
				return nil
			})
			if !slices.Equal(got, tt.want) {
				t.Errorf("levels tried %v, want %v", got, tt.want)
			}
			if (err != nil) != tt.wantFail {
				t.Errorf("error %v", err)
			}
		})
	}

	// A cancelled write is not tried again.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tries := 0
	b := &Backend{opts: Options{Replicas: 3, Consistency: "QUORUM"}}
	err := b.writeAll(ctx, func(url.Values) error { tries++; return ctx.Err() })
	if !errors.Is(err, context.Canceled) || tries != 1 {
		t.Errorf("cancelled write: %v after %d tries", err, tries)
	}
	// Both failing: the error says what each level answered.
	err = b.writeAll(context.Background(), func(q url.Values) error { return errors.New("no " + q.Get("consistency_level")) })
	if err == nil || err.Error() != "no QUORUM (at ALL first: no ALL)" {
		t.Errorf("both failed: %v", err)
	}
}

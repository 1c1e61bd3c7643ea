package storebench

import (
	"context"
	"io"
	"testing"
)

// TestSmallRun checks the harness end to end on a tiny corpus; the numbers
// come from `quarry bench store`, not from tests.
func TestSmallRun(t *testing.T) {
	rep, err := Run(context.Background(), Config{Docs: 500, Queries: 20}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if rep.IndexRate <= 0 || rep.OpenReplay <= 0 || rep.OpenCheckpoint <= 0 || rep.FirstKeyword <= 0 || rep.FirstVector <= 0 || len(rep.Latency) != 3 || rep.HybridRatio <= 0 {
		t.Errorf("report %+v", rep)
	}
}

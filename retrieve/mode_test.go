package retrieve_test

import (
	"testing"

	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/retrieve"
	"github.com/quarry-rag/quarry/store"
)

// TestResolvedCalibrate checks a calibration chooses only what the fixed
// rule would have chosen, for searches, and only with the embedder it was
// measured with.
func TestResolvedCalibrate(t *testing.T) {
	hashModel := embed.ModelInfo{Provider: "hash", Model: "hash-v1", Dimension: 512}
	other := embed.ModelInfo{Provider: "openai", Model: "text-embedding-3-small", Dimension: 1536}
	convex := retrieve.ConfigScore{Name: "hybrid-convex-0.2", Mode: store.ModeHybrid, Fusion: store.Fusion{Method: store.FusionConvex, Alpha: 0.2}}
	cal := &retrieve.Calibration{Choice: convex, Model: hashModel.String()}
	bad := &retrieve.Calibration{Choice: retrieve.ConfigScore{Name: "odd", Mode: "graph"}, Model: hashModel.String()}
	for _, tc := range []struct {
		name       string
		requested  string
		configured string
		ask        bool
		cal        *retrieve.Calibration
		m          embed.ModelInfo
		want       string
		fusion     store.Fusion
	}{
		{"no calibration", "", "", false, nil, hashModel, "keyword", store.Fusion{}},
		{"nothing asked", "", "", false, cal, hashModel, "hybrid-convex-0.2", convex.Fusion},
		{"auto", "auto", "", false, cal, hashModel, "hybrid-convex-0.2", convex.Fusion},
		{"configured auto", "", "auto", false, cal, hashModel, "hybrid-convex-0.2", convex.Fusion},
		{"asked keyword", "keyword", "", false, cal, hashModel, "keyword", store.Fusion{}},
		{"configured keyword", "", "keyword", false, cal, hashModel, "keyword", store.Fusion{}},
		{"an answer", "", "", true, cal, hashModel, "hybrid", store.Fusion{}},
		{"another embedder", "", "", false, cal, other, "hybrid", store.Fusion{}},
		{"an unknown mode", "", "", false, bad, hashModel, "keyword", store.Fusion{}},
	} {
		r, err := retrieve.ResolveMode(tc.requested, tc.configured, tc.m, tc.ask)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		r = r.Calibrate(tc.cal, tc.m)
		if r.Config() != tc.want || r.Fusion != tc.fusion || r.Calibrated != (tc.want == convex.Name) {
			t.Errorf("%s: %+v, want %s", tc.name, r, tc.want)
		}
	}
}

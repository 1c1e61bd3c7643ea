package eval

import (
	"fmt"
	"slices"
	"strings"

	"github.com/quarry-rag/quarry/store"
)

// Configs are the retrieval configurations `quarry eval --mode all`
// compares, in report order; retrieve.DefaultMode was chosen among them.
func Configs() []Config {
	return []Config{
		{Name: "keyword", Mode: store.ModeKeyword},
		{Name: "vector", Mode: store.ModeVector},
		{Name: "hybrid", Mode: store.ModeHybrid},
		{Name: "hybrid-vw0.3", Mode: store.ModeHybrid, Fusion: store.Fusion{VectorWeight: 0.3}},
		{Name: "hybrid-convex", Mode: store.ModeHybrid, Fusion: store.Fusion{Method: store.FusionConvex, Alpha: 0.3}},
	}
}

// ParseConfigs reads configuration names (Configs and
// CalibrationConfigs, "all" for every one of Configs, "calibration" for
// every one of CalibrationConfigs) into configurations, in the order
// given.
func ParseConfigs(names []string) ([]Config, error) {
	all := Configs()
	for _, c := range CalibrationConfigs() {
		if !slices.ContainsFunc(all, func(a Config) bool { return a.Name == c.Name }) {
			all = append(all, c)
		}
	}
	var out []Config
	for _, n := range names {
		switch n {
		case "all":
			out = append(out, Configs()...)
			continue
		case "calibration":
			out = append(out, CalibrationConfigs()...)
			continue
		}
		found := false
		for _, c := range all {
			if c.Name == n {
				out, found = append(out, c), true
				break
			}
		}
		if !found {
			var known []string
			for _, c := range all {
				known = append(known, c.Name)
			}
			return nil, fmt.Errorf("eval: unknown mode %q (use %s, all or calibration)", n, strings.Join(known, ", "))
		}
	}
	return out, nil
}

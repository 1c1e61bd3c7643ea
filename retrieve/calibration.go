package retrieve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/quarry-rag/quarry/store"
)

// CalibrationSetting is the collection setting a calibration is kept
// under.
const CalibrationSetting = "calibration"

// ConfigScore is one retrieval configuration and its figure.
type ConfigScore struct {
	// Name names the configuration ("keyword", "hybrid",
	// "hybrid-convex-0.2").
	Name   string       `json:"name"`
	Mode   store.Mode   `json:"mode"`
	Fusion store.Fusion `json:"fusion"`
	Score  float64      `json:"score"`
}

// Calibration is a collection's measured default: the retrieval
// configuration that ranked the collection's own pseudo-queries best
// (eval.Calibrate), with every configuration's figure.
type Calibration struct {
	// Choice is the configuration searches run when nothing asks for a
	// mode.
	Choice ConfigScore `json:"choice"`
	// Scores are every configuration's figure, in the order measured.
	Scores []ConfigScore `json:"scores"`
	// Rule is the configuration the fixed rule (DefaultMode) would run; a
	// challenger replaces it only by a clear margin.
	Rule string `json:"rule"`
	// Metric is the figure's metric ("ndcg@10"); Queries how many
	// pseudo-queries it was measured on; Documents the collection's size
	// then.
	Metric    string `json:"metric"`
	Queries   int    `json:"queries"`
	Documents int    `json:"documents"`
	// Model is the embedding model it was measured with: another
	// embedder's vectors rank differently, so the calibration does not
	// hold for it.
	Model   string    `json:"model"`
	Seconds float64   `json:"seconds"`
	At      time.Time `json:"at"`
}

// Score returns the named configuration's figure.
func (c *Calibration) Score(name string) (float64, bool) {
	for _, s := range c.Scores {
		if s.Name == name {
			return s.Score, true
		}
	}
	return 0, false
}

// Role says what a configuration is to the calibration: "chosen, rule"
// (the rule was kept), "chosen", "rule", or "".
func (c *Calibration) Role(name string) string {
	var roles []string
	if name == c.Choice.Name {
		roles = append(roles, "chosen")
	}
	if name == c.Rule {
		roles = append(roles, "rule")
	}
	return strings.Join(roles, ", ")
}

// Summary is the calibration's figures on one line, each configuration's
// role marked: "ndcg@10: keyword 0.6304 (rule), hybrid-convex-0.1 0.6423
// (chosen), …".
func (c *Calibration) Summary() string {
	parts := make([]string, len(c.Scores))
	for i, s := range c.Scores {
		parts[i] = fmt.Sprintf("%s %.4f", s.Name, s.Score)
		if r := c.Role(s.Name); r != "" {
			parts[i] += " (" + r + ")"
		}
	}
	return c.Metric + ": " + strings.Join(parts, ", ")
}

// LoadCalibration returns the collection's calibration, nil when it has
// none or its store keeps no settings.
func LoadCalibration(ctx context.Context, c *store.Collection) (*Calibration, error) {
	raw, err := c.Setting(ctx, CalibrationSetting)
	if errors.Is(err, store.ErrUnsupported) || (err == nil && raw == nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var cal Calibration
	if err := json.Unmarshal(raw, &cal); err != nil {
		return nil, fmt.Errorf("collection %q: its calibration is not readable (run quarry eval --calibrate again): %w", c.Name(), err)
	}
	return &cal, nil
}

// SaveCalibration records cal as the collection's default; nil removes
// it, so the fixed rule applies again.
func SaveCalibration(ctx context.Context, c *store.Collection, cal *Calibration) error {
	var raw json.RawMessage
	if cal != nil {
		var err error
		if raw, err = json.Marshal(cal); err != nil {
			return fmt.Errorf("collection %q: calibration: %w", c.Name(), err)
		}
	}
	return c.PutSetting(ctx, CalibrationSetting, raw)
}

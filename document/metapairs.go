package document

import (
	"fmt"
	"strings"
)

// ParseMetaPairs reads metadata given as key=value pairs (a command
// line's): values that read as JSON numbers or booleans are typed,
// everything else is a string, and each pair must be valid metadata.
func ParseMetaPairs(pairs []string) (map[string]any, error) {
	out := map[string]any{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("metadata %q: use key=value", p)
		}
		var val any = v
		if x, err := DecodeJSONValue([]byte(v)); err == nil {
			switch x.(type) {
			case int64, float64, bool:
				val = x
			}
		}
		if err := (&Document{}).SetMetadata(k, val); err != nil {
			return nil, fmt.Errorf("metadata %q: %w", p, err)
		}
		out[k] = val
	}
	return out, nil
}

package rag

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/quarry-rag/quarry/internal/jsonorder"
)

// cleanJSON checks that a structured reply is one JSON value and cleans the
// citation markers in every string inside it, keeping keys in the model's
// order. Some models wrap JSON in a Markdown fence; the fence is dropped.
func cleanJSON(reply string, valid func(int) bool) (json.RawMessage, []int, error) {
	s := strings.TrimSpace(reply)
	if strings.HasPrefix(s, "```") {
		s = strings.TrimPrefix(s, "```json")
		s = strings.TrimPrefix(s, "```")
		s = strings.TrimSuffix(strings.TrimSpace(s), "```")
	}
	v, _, err := jsonorder.Decode(s)
	if err != nil {
		return nil, nil, fmt.Errorf("the model's reply is not JSON: %w", err)
	}
	cited := map[int]bool{}
	v = cleanValue(v, valid, cited)
	nums := make([]int, 0, len(cited))
	for n := range cited {
		nums = append(nums, n)
	}
	slices.Sort(nums)
	return json.RawMessage(jsonorder.Compact(v, nil)), nums, nil
}

func cleanValue(v any, valid func(int) bool, cited map[int]bool) any {
	switch x := v.(type) {
	case string:
		s, nums := cleanMarkers(x, valid)
		for _, n := range nums {
			cited[n] = true
		}
		return s
	case []any:
		for i := range x {
			x[i] = cleanValue(x[i], valid, cited)
		}
	case *jsonorder.Object:
		for i := range x.Vals {
			x.Vals[i] = cleanValue(x.Vals[i], valid, cited)
		}
	}
	return v
}

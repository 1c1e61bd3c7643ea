package pineconetest

import (
	"encoding/json"
	"fmt"
	"sort"
)

// maxIn is Pinecone's limit on the values of one $in or $nin.
const maxIn = 10000

// matcher is a compiled metadata filter.
type matcher func(md map[string]any) bool

// compile reads a metadata filter as Pinecone documents it: fields with
// an operator object or a bare value (equality), $and and $or of
// filters. indexed says which fields may be filtered on (nil: all).
func compile(raw any, indexed map[string]bool) (matcher, error) {
	obj, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("a filter is an object, not %s", js(raw))
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []matcher
	for _, k := range keys {
		v := obj[k]
		switch k {
		case "$and", "$or":
			xs, ok := v.([]any)
			if !ok || len(xs) == 0 {
				return nil, fmt.Errorf("%s takes a non-empty list of filters", k)
			}
			var subs []matcher
			for _, x := range xs {
				m, err := compile(x, indexed)
				if err != nil {
					return nil, err
				}
				subs = append(subs, m)
			}
			and := k == "$and"
			parts = append(parts, func(md map[string]any) bool {
				for _, m := range subs {
					if m(md) != and {
						return !and
					}
				}
				return and
			})
		default:
			if len(k) > 0 && k[0] == '$' {
				return nil, fmt.Errorf("unknown operator %s at the top of a filter", k)
			}
			if indexed != nil && !indexed[k] {
				return nil, fmt.Errorf("metadata field %q is not in the namespace's schema, so it cannot be filtered on", k)
			}
			m, err := field(k, v)
			if err != nil {
				return nil, err
			}
			parts = append(parts, m)
		}
	}
	return func(md map[string]any) bool {
		for _, m := range parts {
			if !m(md) {
				return false
			}
		}
		return true
	}, nil
}

// field compiles the condition on one field.
func field(name string, cond any) (matcher, error) {
	ops, ok := cond.(map[string]any)
	if !ok {
		ops = map[string]any{"$eq": cond}
	}
	if len(ops) != 1 {
		return nil, fmt.Errorf("field %s: one operator a condition, not %d", name, len(ops))
	}
	for op, arg := range ops {
		switch op {
		case "$eq", "$ne":
			if !scalar(arg) {
				return nil, fmt.Errorf("field %s: %s takes a string, number or boolean", name, op)
			}
			eq := op == "$eq"
			return func(md map[string]any) bool { return holds(md[name], arg) == eq }, nil
		case "$in", "$nin":
			xs, ok := arg.([]any)
			if !ok || len(xs) > maxIn {
				return nil, fmt.Errorf("field %s: %s takes a list of at most %d values", name, op, maxIn)
			}
			for _, x := range xs {
				if !scalar(x) {
					return nil, fmt.Errorf("field %s: %s takes strings, numbers or booleans", name, op)
				}
			}
			in := op == "$in"
			return func(md map[string]any) bool {
				for _, x := range xs {
					if holds(md[name], x) {
						return in
					}
				}
				return !in
			}, nil
		case "$gt", "$gte", "$lt", "$lte":
			bound, ok := arg.(float64)
			if !ok {
				return nil, fmt.Errorf("field %s: %s takes a number", name, op)
			}
			return func(md map[string]any) bool {
				x, ok := md[name].(float64)
				if !ok {
					return false
				}
				switch op {
				case "$gt":
					return x > bound
				case "$gte":
					return x >= bound
				case "$lt":
					return x < bound
				}
				return x <= bound
			}, nil
		case "$exists":
			want, ok := arg.(bool)
			if !ok {
				return nil, fmt.Errorf("field %s: $exists takes a boolean", name)
			}
			return func(md map[string]any) bool { _, has := md[name]; return has == want }, nil
		}
		return nil, fmt.Errorf("field %s: unknown operator %s", name, op)
	}
	panic("unreachable")
}

func scalar(v any) bool {
	switch v.(type) {
	case string, float64, bool:
		return true
	}
	return false
}

// holds reports whether a metadata value is v, or, for a list, holds it:
// Pinecone's equality on a list of strings. A missing field holds
// nothing, so $ne and $nin match a record without the field, as they do
// in Pinecone.
func holds(have, v any) bool {
	if xs, ok := have.([]any); ok {
		for _, x := range xs {
			if x == v {
				return true
			}
		}
		return false
	}
	return have != nil && have == v
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

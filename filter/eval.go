package filter

import (
	"encoding/json"
	"reflect"

	"github.com/quarry-rag/quarry/document"
)

// Matcher evaluates a filter in process. It is the reference semantics
// every store is held to (SEMANTICS §2). A Matcher is immutable and safe for
// concurrent use.
type Matcher struct {
	e Expr
}

// NewMatcher checks e and prepares it for evaluation. A raw fragment anywhere
// in the tree is an error: it cannot be evaluated in process. A nil filter
// matches everything.
func NewMatcher(e Expr) (*Matcher, error) {
	if err := Check(e); err != nil {
		return nil, err
	}
	if err := RejectRaw(e, ""); err != nil {
		return nil, err
	}
	if isNil(e) {
		e = nil
	}
	return &Matcher{e: e}, nil
}

// Getter returns the value of a visible field and whether it is present.
type Getter func(field string) (any, bool)

// Match reports whether the fields reported by get satisfy the filter.
func (m *Matcher) Match(get Getter) bool {
	if m.e == nil {
		return true
	}
	return eval(m.e, get)
}

// MatchDocument evaluates the filter over a document's visible fields:
// content, sourceType, sourceName and its metadata.
func (m *Matcher) MatchDocument(d *document.Document) bool {
	if m.e == nil {
		return true
	}
	return eval(m.e, func(f string) (any, bool) {
		switch f {
		case "content":
			return d.Content, true
		case "sourceType":
			return d.SourceType, true
		case "sourceName":
			return d.SourceName, true
		}
		v, ok := d.Metadata[f]
		return v, ok
	})
}

// MatchMap evaluates the filter over a flat map of visible fields.
func (m *Matcher) MatchMap(fields map[string]any) bool {
	return m.Match(func(f string) (any, bool) {
		v, ok := fields[f]
		return v, ok
	})
}

func eval(e Expr, get Getter) bool {
	switch x := e.(type) {
	case *Condition:
		return evalCondition(x, get)
	case *Group:
		if x.Op == OpAnd {
			for _, c := range x.Conditions {
				if !eval(c, get) {
					return false
				}
			}
			return true
		}
		for _, c := range x.Conditions {
			if eval(c, get) {
				return true
			}
		}
		return false
	}
	return false // fail closed
}

func evalCondition(c *Condition, get Getter) bool {
	v, ok := get(c.Field)
	if !ok || v == nil {
		// A missing (or null) field makes every operator false, neq included.
		return false
	}
	switch c.Op {
	case OpEq:
		return equal(v, c.Value)
	case OpNeq:
		return !equal(v, c.Value)
	case OpIn:
		for _, w := range c.Value.([]any) {
			if equal(v, w) {
				return true
			}
		}
		return false
	case OpGt, OpGte, OpLt, OpLte:
		return compareRange(c.Op, v, c.Value)
	case OpContainsAny, OpContainsAll:
		elems, ok := arrayElems(v)
		if !ok {
			return false
		}
		want := c.Value.([]any)
		if c.Op == OpContainsAny {
			for _, w := range want {
				if containsValue(elems, w) {
					return true
				}
			}
			return false
		}
		for _, w := range want {
			if !containsValue(elems, w) {
				return false
			}
		}
		return true
	}
	return false
}

// equal is the portable equality: numbers compare numerically (2024 equals
// 2024.0); everything else needs the same type and value.
func equal(stored, want any) bool {
	switch w := want.(type) {
	case string:
		s, ok := stored.(string)
		if !ok {
			if _, isNum := stored.(json.Number); isNum {
				return false
			}
			rv := reflect.ValueOf(stored)
			return rv.Kind() == reflect.String && rv.String() == w
		}
		return s == w
	case bool:
		b, ok := stored.(bool)
		if !ok {
			rv := reflect.ValueOf(stored)
			return rv.Kind() == reflect.Bool && rv.Bool() == w
		}
		return b == w
	case int64, float64:
		if _, isBool := stored.(bool); isBool {
			return false
		}
		sf, si, sInt, ok := document.Number(stored)
		if !ok {
			return false
		}
		wf, wi, wInt, _ := document.Number(w)
		if sInt && wInt {
			return si == wi
		}
		return sf == wf
	}
	return false
}

func compareRange(op Op, stored, want any) bool {
	if _, isBool := stored.(bool); isBool {
		return false
	}
	sf, si, sInt, ok := document.Number(stored)
	if !ok {
		return false
	}
	wf, wi, wInt, _ := document.Number(want)
	var cmp int
	if sInt && wInt {
		cmp = compareInt(si, wi)
	} else {
		cmp = compareFloat(sf, wf)
	}
	switch op {
	case OpGt:
		return cmp > 0
	case OpGte:
		return cmp >= 0
	case OpLt:
		return cmp < 0
	case OpLte:
		return cmp <= 0
	}
	return false
}

func compareInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func compareFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func arrayElems(v any) ([]any, bool) {
	switch x := v.(type) {
	case []any:
		return x, true
	case []string:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out, true
	case string, map[string]any:
		return nil, false
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return nil, false
	}
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = rv.Index(i).Interface()
	}
	return out, true
}

func containsValue(elems []any, w any) bool {
	for _, e := range elems {
		if equal(e, w) {
			return true
		}
	}
	return false
}

package filter

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/quarry-rag/quarry/document"
)

// Fold is what a condition is known to be before a store sees a document.
type Fold int

const (
	// Depends means the condition depends on the document.
	Depends Fold = iota
	// Always means every document with the field matches.
	Always
	// Never means no document matches.
	Never
)

// StoredValue converts a filter value into the stored form of a scalar
// field of type typ, for stores whose equality needs the field's own type
// (an integer field is compared with an integer, a float field with a
// float); false when no stored value can equal it.
func StoredValue(typ document.FieldType, v any) (any, bool) {
	switch typ {
	case document.TypeString:
		if s, ok := v.(string); ok {
			return s, true
		}
	case document.TypeBoolean:
		if b, ok := v.(bool); ok {
			return b, true
		}
	case document.TypeInteger:
		switch n := v.(type) {
		case int64:
			return n, true
		case float64:
			if n == math.Trunc(n) && n >= math.MinInt64 && n < math.MaxInt64 {
				return int64(n), true
			}
		}
	case document.TypeFloat:
		switch n := v.(type) {
		case int64:
			return float64(n), true
		case float64:
			return n, true
		}
	}
	return nil, false
}

// StoredValues is StoredValue over the values an equality condition (eq,
// neq or in) compares with: its one value, or an in's list. Values no
// stored one can equal are left out, so an empty result means the
// condition matches nothing (eq, in) or everything with the field (neq).
func StoredValues(typ document.FieldType, c *Condition) []any {
	wants := []any{c.Value}
	if c.Op == OpIn {
		wants = c.Value.([]any)
	}
	var vals []any
	for _, w := range wants {
		if v, ok := StoredValue(typ, w); ok {
			vals = append(vals, v)
		}
	}
	return vals
}

// NumericBound is the bound of a range condition (gt, gte, lt, lte) on a
// numeric field, in the field's type. An integer field compared with a
// fractional bound moves the bound to the integer that keeps the meaning
// (year > 2020.5 is year > 2020, year >= 2020.5 is year >= 2021), so an
// integer index serves it exactly; a bound beyond int64 folds the
// condition to Always (for a document with the field) or Never.
func NumericBound(op Op, typ document.FieldType, v any) (any, Fold) {
	f, i, isInt, ok := document.Number(v)
	if !ok {
		return nil, Never
	}
	if typ == document.TypeFloat {
		if isInt {
			return float64(i), Depends
		}
		return f, Depends
	}
	if isInt {
		return i, Depends
	}
	switch {
	case f >= math.MaxInt64:
		if op == OpLt || op == OpLte {
			return nil, Always
		}
		return nil, Never
	case f < math.MinInt64:
		if op == OpGt || op == OpGte {
			return nil, Always
		}
		return nil, Never
	}
	if op == OpGt || op == OpLte {
		return int64(math.Floor(f)), Depends
	}
	return int64(math.Ceil(f)), Depends
}

// FoldGroup compiles a group for a store whose compiler folds what it can
// decide before it sees a document: compile gives each condition's
// expression in the store's syntax and its Fold (Always here meaning every
// document). An and holding a Never, or an or holding an Always, is that
// constant; the children that decide nothing by themselves are dropped;
// an and left with no child is Always and an or Never. parts are the
// children that depend on the document, in order, when fold is Depends.
func FoldGroup[T any](g *Group, compile func(Expr) (T, Fold, error)) (parts []T, fold Fold, err error) {
	for _, child := range g.Conditions {
		part, f, err := compile(child)
		if err != nil {
			return nil, Depends, err
		}
		switch {
		case g.Op == OpAnd && f == Never:
			return nil, Never, nil
		case g.Op == OpOr && f == Always:
			return nil, Always, nil
		case f == Depends:
			parts = append(parts, part)
		}
	}
	switch {
	case len(parts) > 0:
		return parts, Depends, nil
	case g.Op == OpAnd:
		return nil, Always, nil
	}
	return nil, Never, nil
}

// Stored is a document's metadata value as a store keeps it for filters
// on a filterable field of type typ: a list of strings as []string, a
// scalar as StoredValue gives it, after the forms metadata built in Go
// takes (int, int32, float32, json.Number) are read as JSON would give
// them. An error says the value does not have the field's type.
func Stored(typ document.FieldType, v any) (any, error) {
	if typ == document.TypeStringList {
		if ss, ok := v.([]string); ok {
			return ss, nil
		}
		xs, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%v is not a list of strings", v)
		}
		out := make([]string, len(xs))
		for i, x := range xs {
			s, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("%v is not a list of strings", v)
			}
			out[i] = s
		}
		return out, nil
	}
	switch x := v.(type) {
	case int:
		v = int64(x)
	case int32:
		v = int64(x)
	case float32:
		v = float64(x)
	case json.Number:
		if n, err := x.Int64(); err == nil {
			v = n
		} else if f, err := x.Float64(); err == nil {
			v = f
		}
	}
	sv, ok := StoredValue(typ, v)
	if !ok {
		return nil, fmt.Errorf("%v is not a %s", v, typ)
	}
	return sv, nil
}

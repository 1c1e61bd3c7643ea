// Package sqlexpr holds what Quarry's SQL stores share when they turn a
// portable filter into a WHERE expression: the walk over AND and OR
// groups, the decoding of a raw fragment tagged for the store, the rule for
// the field names that may appear in SQL text, and the vector literal that
// pgvector and MariaDB's VEC_FromText both read. Each store compiles
// conditions its own way and checks its own fragments.
package sqlexpr

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/quarry-rag/quarry/filter"
)

// Compiler compiles the leaves of a filter for one store.
type Compiler interface {
	Condition(c *filter.Condition) (string, error)
	Raw(r *filter.Raw) (string, error)
}

// Walk compiles e: groups become parenthesised AND or OR of their
// conditions, leaves go to c.
func Walk(e filter.Expr, c Compiler) (string, error) {
	switch x := e.(type) {
	case *filter.Group:
		parts := make([]string, len(x.Conditions))
		for i, child := range x.Conditions {
			s, err := Walk(child, c)
			if err != nil {
				return "", err
			}
			parts[i] = s
		}
		op := " AND "
		if x.Op == filter.OpOr {
			op = " OR "
		}
		return "(" + strings.Join(parts, op) + ")", nil
	case *filter.Raw:
		return c.Raw(x)
	case *filter.Condition:
		return c.Condition(x)
	}
	return "", fmt.Errorf("unsupported filter expression %T", e)
}

// Fragment is the SQL of a raw fragment tagged for dialect: a JSON string.
// The store still checks it before it runs.
func Fragment(r *filter.Raw, dialect string) (string, error) {
	if r.Store != dialect {
		return "", fmt.Errorf("raw filter targets %s; this store is %s", r.Store, dialect)
	}
	var frag string
	if err := json.Unmarshal(r.Fragment, &frag); err != nil {
		return "", fmt.Errorf("a %s raw fragment must be a JSON string of SQL: %w", dialect, err)
	}
	return frag, nil
}

// IsIdent reports whether a field name is ^[A-Za-z_][A-Za-z0-9_]*$, safe to
// write into SQL text as part of a JSON path.
func IsIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// VectorText is a vector as "[x,y,…]"; 'g' with precision -1 round-trips
// every float32 exactly.
func VectorText(v []float32) string {
	buf := make([]byte, 0, len(v)*10+2)
	buf = append(buf, '[')
	for i, x := range v {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendFloat(buf, float64(x), 'g', -1, 32)
	}
	return string(append(buf, ']'))
}

// HasRaw reports whether e holds a raw fragment anywhere.
func HasRaw(e filter.Expr) bool {
	switch x := e.(type) {
	case *filter.Raw:
		return true
	case *filter.Group:
		for _, c := range x.Conditions {
			if HasRaw(c) {
				return true
			}
		}
	}
	return false
}

// Guarded compiles e so that its raw fragments are evaluated only on rows
// that pass everything else the statement requires: lead (the store's own
// conditions, such as the collection; "" for none) and e with each
// fragment taken as true. A filter has no NOT, so that condition holds
// wherever e does, and
//
//	lead AND pre AND CASE WHEN lead AND pre THEN e ELSE FALSE END
//
// selects exactly the rows e does. SQL leaves the order of AND's operands to
// the planner but not CASE's: a fragment is never run on another tenant's
// or collection's row, so neither its errors nor its time can tell anything
// about one. The first copy of pre keeps the scope's conditions where the
// planner can use indexes for them. The compiler sees pre, pre and e in
// that order, the order of the text, so positional parameters line up.
func Guarded(e filter.Expr, c Compiler, lead string) (string, error) {
	pre, err := Walk(e, rawAsTrue{c})
	if err != nil {
		return "", err
	}
	pre2, err := Walk(e, rawAsTrue{c})
	if err != nil {
		return "", err
	}
	full, err := Walk(e, c)
	if err != nil {
		return "", err
	}
	if lead != "" {
		pre, pre2 = lead+" AND "+pre, lead+" AND "+pre2
	}
	return pre + " AND CASE WHEN " + pre2 + " THEN " + full + " ELSE FALSE END", nil
}

// rawAsTrue compiles conditions with the store's compiler and every raw
// fragment as TRUE.
type rawAsTrue struct{ Compiler }

func (rawAsTrue) Raw(*filter.Raw) (string, error) { return "TRUE", nil }

// WithoutRaw is f with its raw fragments taken as true, nil when nothing
// else is left: the part of a filter Quarry compiles itself.
func WithoutRaw(f filter.Expr) filter.Expr {
	switch x := f.(type) {
	case *filter.Raw:
		return nil
	case *filter.Group:
		var keep []filter.Expr
		for _, c := range x.Conditions {
			c = WithoutRaw(c)
			if c == nil {
				if x.Op == filter.OpOr {
					return nil // one branch is true: the whole OR is
				}
				continue
			}
			keep = append(keep, c)
		}
		switch len(keep) {
		case 0:
			return nil
		case 1:
			return keep[0]
		}
		return &filter.Group{Op: x.Op, Conditions: keep}
	}
	return f
}

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

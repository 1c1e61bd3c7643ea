package meilisearch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
)

// compiled is a compiled filter: what it is known to be, and when that
// depends on the document, its Meilisearch filter expression.
type compiled struct {
	t    filter.Fold
	expr string
}

// compileFilter turns a validated filter into a filter expression with
// filter.Matcher's meaning: a missing field matches nothing (neq
// included, through q_has), numbers compare numerically across integer
// and float, other values need the field's own type, a list never equals
// a scalar. Strings are compared hex-encoded, as they are stored.
func compileFilter(e filter.Expr, schema *document.Schema) (compiled, error) {
	switch x := e.(type) {
	case nil:
		return compiled{t: filter.Always}, nil
	case *filter.Group:
		parts, fold, err := filter.FoldGroup(x, func(e filter.Expr) (string, filter.Fold, error) {
			c, err := compileFilter(e, schema)
			return c.expr, c.t, err
		})
		switch {
		case err != nil || fold != filter.Depends:
			return compiled{t: fold}, err
		case len(parts) == 1:
			return compiled{expr: parts[0]}, nil
		}
		sep := " AND "
		if x.Op == filter.OpOr {
			sep = " OR "
		}
		return compiled{expr: "(" + strings.Join(parts, sep) + ")"}, nil
	case *filter.Raw:
		if x.Store != Dialect {
			return compiled{}, fmt.Errorf("raw filter targets %s; this store is %s", x.Store, Dialect)
		}
		var s string
		if err := json.NewDecoder(bytes.NewReader(x.Fragment)).Decode(&s); err != nil || strings.TrimSpace(s) == "" {
			return compiled{}, fmt.Errorf("a meilisearch raw fragment must be a JSON string holding a filter expression")
		}
		return compiled{expr: "(" + s + ")"}, nil
	case *filter.Condition:
		return compileCondition(x, schema)
	}
	return compiled{}, fmt.Errorf("unsupported filter expression %T", e)
}

func compileCondition(c *filter.Condition, schema *document.Schema) (compiled, error) {
	name, typ, builtin := "", document.TypeString, true
	switch c.Field {
	case "sourceType":
		name = fSType
	case "sourceName":
		name = fSName
	default:
		f, err := schema.Filterable(c.Field)
		if err != nil {
			return compiled{}, err
		}
		name, typ, builtin = metaField(f.Name), f.Type, false
	}
	one := func(s string) (compiled, error) { return compiled{expr: s}, nil }
	// present holds for a document with the field: built-in fields are
	// always there.
	present := ""
	if !builtin {
		present = fHas + " = " + literal(c.Field)
	}
	with := func(s string) string {
		if present == "" {
			return s
		}
		return "(" + present + " AND " + s + ")"
	}
	switch c.Op {
	case filter.OpEq, filter.OpNeq, filter.OpIn:
		if typ.IsList() {
			if c.Op == filter.OpNeq {
				return one(present) // a list never equals a scalar
			}
			return compiled{t: filter.Never}, nil
		}
		wants := []any{c.Value}
		if c.Op == filter.OpIn {
			wants = c.Value.([]any)
		}
		var vals []string
		for _, w := range wants {
			if v, ok := filter.StoredValue(typ, w); ok {
				vals = append(vals, literal(v))
			}
		}
		switch {
		case len(vals) == 0 && c.Op == filter.OpNeq:
			if present == "" {
				return compiled{t: filter.Always}, nil
			}
			return one(present) // a value of another type is never equal
		case len(vals) == 0:
			return compiled{t: filter.Never}, nil
		case c.Op == filter.OpNeq:
			return one(with(name + " != " + vals[0]))
		case len(vals) == 1:
			return one(name + " = " + vals[0])
		}
		return one(name + " IN [" + strings.Join(vals, ", ") + "]")
	case filter.OpGt, filter.OpGte, filter.OpLt, filter.OpLte:
		if !typ.IsNumeric() || typ.IsList() {
			return compiled{t: filter.Never}, nil
		}
		v, fold := filter.NumericBound(c.Op, typ, c.Value)
		switch fold {
		case filter.Always:
			return one(present)
		case filter.Never:
			return compiled{t: filter.Never}, nil
		}
		return one(name + " " + rangeOps[c.Op] + " " + literal(v))
	case filter.OpContainsAny, filter.OpContainsAll:
		if typ != document.TypeStringList {
			return compiled{t: filter.Never}, nil // only lists of strings hold strings
		}
		var vals []string
		for _, v := range c.Value.([]any) {
			if s, ok := v.(string); ok {
				vals = append(vals, literal(s))
			}
		}
		if len(vals) == 0 {
			return compiled{t: filter.Never}, nil
		}
		if c.Op == filter.OpContainsAny {
			if len(vals) == 1 {
				return one(name + " = " + vals[0])
			}
			return one(name + " IN [" + strings.Join(vals, ", ") + "]") // a list matches when an element does
		}
		all := make([]string, len(vals))
		for i, v := range vals {
			all[i] = name + " = " + v
		}
		if len(all) == 1 {
			return one(all[0])
		}
		return one("(" + strings.Join(all, " AND ") + ")")
	}
	return compiled{}, fmt.Errorf("unsupported operator %s", c.Op)
}

var rangeOps = map[filter.Op]string{filter.OpGt: ">", filter.OpGte: ">=", filter.OpLt: "<", filter.OpLte: "<="}

// literal is a value in a filter: strings hex-encoded as they are stored,
// in quotes, numbers and booleans bare.
func literal(v any) string {
	switch x := v.(type) {
	case string:
		return `"` + hexs(x) + `"`
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case int:
		return strconv.Itoa(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// and joins filter expressions, skipping empty ones.
func and(parts ...string) string {
	var kept []string
	for _, p := range parts {
		if p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, " AND ")
}

// visible is the filter of a kind's documents under a user filter; false
// when the filter cannot match.
func (c *collection) visible(kind string, f filter.Expr) (string, bool, error) {
	cf, err := compileFilter(f, c.cfg.Schema)
	if err != nil {
		return "", false, err
	}
	if cf.t == filter.Never {
		return "", false, nil
	}
	return and(kindIs(kind), cf.expr), true, nil
}

// kindIs is the filter of one kind of document; kinds are plain words,
// stored as they are.
func kindIs(kind string) string { return fKind + ` = "` + kind + `"` }

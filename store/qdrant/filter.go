package qdrant

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
)

// cond is one Qdrant condition in its REST JSON shape: a field condition
// ({"key", "match"|"range"}) or a nested filter ({"must"|"should"|…}).
type cond = map[string]any

// truth is a filter that folded to a constant.
type truth int

const (
	unknown truth = iota // depends on the document
	always
	never
)

// compiled is a compiled filter: a constant, or the conditions that must
// all hold.
type compiled struct {
	t    truth
	must []any
}

func constant(t truth) compiled { return compiled{t: t} }

// compileFilter turns a validated filter into Qdrant conditions, as
// SEMANTICS §4 shapes them (and → one must list, or → should, a branch of
// several conditions wrapped in must), with filter.Matcher's meaning: a
// missing field matches nothing, numbers compare numerically across
// integer and float, other values need the field's own type. Qdrant's
// match takes only strings, integers and booleans, so equality on a float
// field is a closed range.
func compileFilter(e filter.Expr, schema *document.Schema) (compiled, error) {
	switch x := e.(type) {
	case nil:
		return constant(always), nil
	case *filter.Group:
		var parts []compiled
		for _, child := range x.Conditions {
			c, err := compileFilter(child, schema)
			if err != nil {
				return compiled{}, err
			}
			switch {
			case x.Op == filter.OpAnd && c.t == never, x.Op == filter.OpOr && c.t == always:
				return c, nil
			case c.t == unknown:
				parts = append(parts, c)
			}
		}
		switch len(parts) {
		case 0:
			if x.Op == filter.OpAnd {
				return constant(always), nil
			}
			return constant(never), nil
		case 1:
			return parts[0], nil
		}
		if x.Op == filter.OpAnd {
			var must []any
			for _, p := range parts {
				must = append(must, p.must...)
			}
			return compiled{must: must}, nil
		}
		should := make([]any, len(parts))
		for i, p := range parts {
			should[i] = p.one()
		}
		return compiled{must: []any{cond{"should": should}}}, nil
	case *filter.Raw:
		if x.Store != Dialect {
			return compiled{}, fmt.Errorf("raw filter targets %s; this store is %s", x.Store, Dialect)
		}
		var c cond
		dec := json.NewDecoder(bytes.NewReader(x.Fragment))
		dec.UseNumber() // keep 2020 an integer: match refuses 2020.0
		if err := dec.Decode(&c); err != nil || c == nil {
			return compiled{}, fmt.Errorf("a qdrant raw fragment must be one JSON condition object: %v", err)
		}
		return compiled{must: []any{c}}, nil
	case *filter.Condition:
		return compileCondition(x, schema)
	}
	return compiled{}, fmt.Errorf("unsupported filter expression %T", e)
}

// one is the compiled filter as a single condition.
func (c compiled) one() any {
	if len(c.must) == 1 {
		return c.must[0]
	}
	return cond{"must": c.must}
}

func compileCondition(c *filter.Condition, schema *document.Schema) (compiled, error) {
	key, typ := c.Field, document.TypeString
	if c.Field != keySType && c.Field != keySName {
		f, err := schema.Filterable(c.Field)
		if err != nil {
			return compiled{}, err
		}
		typ = f.Type
	}
	present := cond{"must_not": []any{cond{"is_empty": cond{"key": key}}}}
	one := func(x any) compiled { return compiled{must: []any{x}} }
	switch c.Op {
	case filter.OpEq, filter.OpNeq, filter.OpIn:
		if typ.IsList() {
			// A list never equals a scalar (validation refuses this; the
			// meaning is kept for raw callers of the compiler).
			if c.Op == filter.OpNeq {
				return one(present), nil
			}
			return constant(never), nil
		}
		vals := filter.StoredValues(typ, c)
		if len(vals) == 0 {
			if c.Op == filter.OpNeq {
				return one(present), nil // a value of another type is never equal
			}
			return constant(never), nil
		}
		switch {
		case c.Op == filter.OpNeq && typ != document.TypeFloat && typ != document.TypeBoolean:
			return one(cond{"key": key, "match": cond{"except": vals}}), nil
		case c.Op == filter.OpNeq:
			return one(cond{"must": []any{present}, "must_not": []any{equals(key, typ, vals[0])}}), nil
		case len(vals) == 1:
			return one(equals(key, typ, vals[0])), nil
		case typ == document.TypeString || typ == document.TypeInteger:
			return one(cond{"key": key, "match": cond{"any": vals}}), nil
		}
		should := make([]any, len(vals))
		for i, v := range vals {
			should[i] = equals(key, typ, v)
		}
		return one(cond{"should": should}), nil
	case filter.OpGt, filter.OpGte, filter.OpLt, filter.OpLte:
		if typ != document.TypeInteger && typ != document.TypeFloat {
			return constant(never), nil
		}
		v, fold := filter.NumericBound(c.Op, typ, c.Value)
		switch fold {
		case filter.Always:
			return one(present), nil
		case filter.Never:
			return constant(never), nil
		}
		return one(cond{"key": key, "range": cond{string(c.Op): v}}), nil
	case filter.OpContainsAny, filter.OpContainsAll:
		if typ != document.TypeStringList {
			return constant(never), nil // only lists of strings hold strings
		}
		var ss []any
		for _, v := range c.Value.([]any) {
			if s, ok := v.(string); ok {
				ss = append(ss, s)
			}
		}
		if len(ss) == 0 {
			return constant(never), nil
		}
		if c.Op == filter.OpContainsAny {
			return one(cond{"key": key, "match": cond{"any": ss}}), nil
		}
		must := make([]any, len(ss))
		for i, s := range ss {
			must[i] = cond{"key": key, "match": cond{"value": s}}
		}
		return one(cond{"must": must}), nil
	}
	return compiled{}, fmt.Errorf("unsupported operator %s", c.Op)
}

// equals is the condition that a scalar field holds v (in its stored form).
func equals(key string, typ document.FieldType, v any) cond {
	if typ == document.TypeFloat {
		return cond{"key": key, "range": cond{"gte": v, "lte": v}}
	}
	return cond{"key": key, "match": cond{"value": v}}
}

// visible is the filter of a request over one kind of point: the kind
// first, then the caller's conditions; false when the caller's filter
// can match nothing.
func (c *collection) visible(kind string, f filter.Expr) (cond, bool, error) {
	cf, err := compileFilter(f, c.cfg.Schema)
	if err != nil {
		return nil, false, err
	}
	if cf.t == never {
		return nil, false, nil
	}
	must := append([]any{cond{"key": keyKind, "match": cond{"value": kind}}}, cf.must...)
	return cond{"must": must}, true, nil
}

package opensearch

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
)

// clause is one query clause in the engines' query DSL, as JSON.
type clause = map[string]any

// compiled is a compiled filter: a constant, or the clause a document
// must match.
type compiled struct {
	fold filter.Fold
	q    clause
}

func constant(f filter.Fold) compiled { return compiled{fold: f} }

// query is the compiled filter as one clause: match_all or match_none for
// a constant.
func (c compiled) query() clause {
	switch c.fold {
	case filter.Always:
		return clause{"match_all": clause{}}
	case filter.Never:
		return clause{"match_none": clause{}}
	}
	return c.q
}

// compileFilter turns a validated filter into a query clause of the
// OpenSearch and Elasticsearch query DSL (the same for both), with
// filter.Matcher's meaning: a missing field matches nothing (so "!=" also
// requires the field to exist), numbers compare numerically across integer
// and float, other values need the field's own type. And is a bool must
// list, or a bool should list with minimum_should_match 1; a single
// condition is its clause alone. dialect is the store's, which alone may
// run raw fragments tagged with it.
func compileFilter(e filter.Expr, schema *document.Schema, dialect string) (compiled, error) {
	switch x := e.(type) {
	case nil:
		return constant(filter.Always), nil
	case *filter.Group:
		var parts []clause
		for _, child := range x.Conditions {
			c, err := compileFilter(child, schema, dialect)
			if err != nil {
				return compiled{}, err
			}
			switch {
			case x.Op == filter.OpAnd && c.fold == filter.Never, x.Op == filter.OpOr && c.fold == filter.Always:
				return c, nil
			case c.fold == filter.Depends:
				parts = append(parts, c.q)
			}
		}
		switch len(parts) {
		case 0:
			if x.Op == filter.OpAnd {
				return constant(filter.Always), nil
			}
			return constant(filter.Never), nil
		case 1:
			return compiled{q: parts[0]}, nil
		}
		if x.Op == filter.OpOr {
			return compiled{q: clause{"bool": clause{"should": anys(parts), "minimum_should_match": 1}}}, nil
		}
		return compiled{q: conjunction(parts)}, nil
	case *filter.Raw:
		if x.Store != dialect {
			return compiled{}, fmt.Errorf("raw filter targets %s; this store is %s", x.Store, dialect)
		}
		var c clause
		dec := json.NewDecoder(bytes.NewReader(x.Fragment))
		dec.UseNumber() // keep 2020 an integer
		if err := dec.Decode(&c); err != nil || c == nil {
			return compiled{}, fmt.Errorf("a %s raw fragment must be one query clause (a JSON object): %v", dialect, err)
		}
		return compiled{q: c}, nil
	case *filter.Condition:
		return compileCondition(x, schema)
	}
	return compiled{}, fmt.Errorf("unsupported filter expression %T", e)
}

// conjunction is a bool query that all parts must match. A part that is
// itself only must and must_not lists (a "!=") is merged into it, so
// conditions stay one level deep.
func conjunction(parts []clause) clause {
	var must, mustNot []any
	for _, p := range parts {
		if b, ok := p["bool"].(clause); ok && len(p) == 1 && onlyMust(b) {
			must = append(must, listOf(b["must"])...)
			mustNot = append(mustNot, listOf(b["must_not"])...)
			continue
		}
		must = append(must, p)
	}
	b := clause{}
	if len(must) > 0 {
		b["must"] = must
	}
	if len(mustNot) > 0 {
		b["must_not"] = mustNot
	}
	return clause{"bool": b}
}

func onlyMust(b clause) bool {
	for k := range b {
		if k != "must" && k != "must_not" {
			return false
		}
	}
	return true
}

func listOf(v any) []any {
	l, _ := v.([]any)
	return l
}

func anys(cs []clause) []any {
	out := make([]any, len(cs))
	for i, c := range cs {
		out[i] = c
	}
	return out
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
	exists := clause{"exists": clause{"field": key}}
	one := func(q clause) (compiled, error) { return compiled{q: q}, nil }
	switch c.Op {
	case filter.OpEq, filter.OpNeq, filter.OpIn:
		if typ.IsList() {
			// A list never equals a scalar (validation refuses this; the
			// meaning is kept for raw callers of the compiler).
			if c.Op == filter.OpNeq {
				return one(exists)
			}
			return constant(filter.Never), nil
		}
		vals := filter.StoredValues(typ, c)
		switch {
		case c.Op == filter.OpNeq && len(vals) == 0:
			return one(exists) // a value of another type is never equal
		case c.Op == filter.OpNeq:
			return one(clause{"bool": clause{"must": []any{exists}, "must_not": []any{clause{"term": clause{key: vals[0]}}}}})
		case len(vals) == 0:
			return constant(filter.Never), nil
		case len(vals) == 1:
			return one(clause{"term": clause{key: vals[0]}})
		}
		return one(clause{"terms": clause{key: vals}})
	case filter.OpGt, filter.OpGte, filter.OpLt, filter.OpLte:
		if typ != document.TypeInteger && typ != document.TypeFloat {
			return constant(filter.Never), nil
		}
		v, fold := filter.NumericBound(c.Op, typ, c.Value)
		switch fold {
		case filter.Always:
			return one(exists)
		case filter.Never:
			return constant(filter.Never), nil
		}
		return one(clause{"range": clause{key: clause{string(c.Op): v}}})
	case filter.OpContainsAny, filter.OpContainsAll:
		if typ != document.TypeStringList {
			return constant(filter.Never), nil // only lists of strings hold strings
		}
		var ss []any
		for _, v := range c.Value.([]any) {
			if s, ok := v.(string); ok {
				ss = append(ss, s)
			}
		}
		switch {
		case len(ss) == 0:
			return constant(filter.Never), nil
		case len(ss) == 1:
			return one(clause{"term": clause{key: ss[0]}})
		case c.Op == filter.OpContainsAny:
			return one(clause{"terms": clause{key: ss}})
		}
		must := make([]any, len(ss))
		for i, s := range ss {
			must[i] = clause{"term": clause{key: s}}
		}
		return one(clause{"bool": clause{"must": must}})
	}
	return compiled{}, fmt.Errorf("unsupported operator %s", c.Op)
}

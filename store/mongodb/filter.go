package mongodb

import (
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
)

// where is an MQL query.
type where = map[string]any

// compiled is a compiled filter: what it is known to be, and when that
// depends on the record, its where object.
type compiled struct {
	t filter.Fold
	w any // where, or a raw fragment's bson.D
}

// compileFilter turns a validated filter into a MQL query with
// filter.Matcher's meaning: a missing field matches nothing ($ne and $nin
// included, through $exists), numbers compare numerically across integer
// and float, other values need the field's own type, a list never equals
// a scalar.
func compileFilter(e filter.Expr, schema *document.Schema) (compiled, error) {
	switch x := e.(type) {
	case nil:
		return compiled{t: filter.Always}, nil
	case *filter.Group:
		ws, fold, err := filter.FoldGroup(x, func(e filter.Expr) (any, filter.Fold, error) {
			c, err := compileFilter(e, schema)
			return c.w, c.t, err
		})
		switch {
		case err != nil || fold != filter.Depends:
			return compiled{t: fold}, err
		case len(ws) == 1:
			return compiled{w: ws[0]}, nil
		}
		op := "$and"
		if x.Op == filter.OpOr {
			op = "$or"
		}
		return compiled{w: where{op: ws}}, nil
	case *filter.Raw:
		if x.Store != Dialect {
			return compiled{}, fmt.Errorf("raw filter targets %s; this store is %s", x.Store, Dialect)
		}
		var obj bson.D
		if err := bson.UnmarshalExtJSON(x.Fragment, false, &obj); err != nil || len(obj) == 0 {
			return compiled{}, fmt.Errorf("a mongodb raw fragment must be a JSON object holding an MQL query")
		}
		return compiled{w: obj}, nil
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
	one := func(w any) (compiled, error) { return compiled{w: w}, nil }
	never := compiled{t: filter.Never}
	// present holds for a record with the field: built-in fields are
	// always there.
	var present any
	if !builtin {
		present = where{name: where{"$exists": true}}
	}
	with := func(w any) any {
		if present == nil {
			return w
		}
		return where{"$and": []any{present, w}}
	}
	orPresent := func() (compiled, error) {
		if present == nil {
			return compiled{t: filter.Always}, nil
		}
		return one(present)
	}
	switch c.Op {
	case filter.OpEq, filter.OpNeq, filter.OpIn:
		if typ.IsList() {
			if c.Op == filter.OpNeq {
				return orPresent() // a list never equals a scalar
			}
			return never, nil
		}
		wants := []any{c.Value}
		if c.Op == filter.OpIn {
			wants = c.Value.([]any)
		}
		var vals []any
		for _, w := range wants {
			if v, ok := filter.StoredValue(typ, w); ok {
				vals = append(vals, v)
			}
		}
		switch {
		case len(vals) == 0 && c.Op == filter.OpNeq:
			return orPresent() // a value of another type is never equal
		case len(vals) == 0:
			return never, nil
		case c.Op == filter.OpNeq:
			return one(with(where{name: where{"$ne": vals[0]}}))
		case len(vals) == 1:
			return one(where{name: where{"$eq": vals[0]}})
		}
		return one(where{name: where{"$in": vals}})
	case filter.OpGt, filter.OpGte, filter.OpLt, filter.OpLte:
		if !typ.IsNumeric() || typ.IsList() {
			return never, nil
		}
		v, fold := filter.NumericBound(c.Op, typ, c.Value)
		switch fold {
		case filter.Always:
			return orPresent()
		case filter.Never:
			return never, nil
		}
		return one(where{name: where{rangeOps[c.Op]: v}})
	case filter.OpContainsAny, filter.OpContainsAll:
		if typ != document.TypeStringList {
			return never, nil // only lists of strings hold strings
		}
		var ws []any
		for _, v := range c.Value.([]any) {
			if s, ok := v.(string); ok {
				ws = append(ws, where{name: where{"$in": []string{s}}})
			}
		}
		switch {
		case len(ws) == 0:
			return never, nil
		case len(ws) == 1:
			return one(ws[0])
		case c.Op == filter.OpContainsAny:
			return one(where{"$or": ws})
		}
		return one(where{"$and": ws})
	}
	return compiled{}, fmt.Errorf("unsupported operator %s", c.Op)
}

var rangeOps = map[filter.Op]string{filter.OpGt: "$gt", filter.OpGte: "$gte", filter.OpLt: "$lt", filter.OpLte: "$lte"}

// visible is the where object of a user filter (nil for every record);
// false when the filter cannot match.
func (c *collection) visible(f filter.Expr) (any, bool, error) {
	cf, err := compileFilter(f, c.cfg.Schema)
	if err != nil {
		return nil, false, err
	}
	if cf.t == filter.Never {
		return nil, false, nil
	}
	return cf.w, true, nil
}

// op is an Atlas Search operator: {"equals": {...}}.
type op = bson.D

func searchOp(name string, args bson.D) op { return op{{Key: name, Value: args}} }

// compileSearch turns a validated filter into an Atlas Search operator
// with the same meaning as compileFilter's query, for the filter clause
// of a $search compound: equals, in, range and exists over the fields the
// text index maps as token, number or boolean. A raw fragment, an MQL
// query, has no Atlas Search form and is refused.
func compileSearch(e filter.Expr, schema *document.Schema) (op, filter.Fold, error) {
	switch x := e.(type) {
	case nil:
		return nil, filter.Always, nil
	case *filter.Group:
		ops, fold, err := filter.FoldGroup(x, func(e filter.Expr) (op, filter.Fold, error) {
			return compileSearch(e, schema)
		})
		switch {
		case err != nil || fold != filter.Depends:
			return nil, fold, err
		case len(ops) == 1:
			return ops[0], filter.Depends, nil
		}
		clauses := bson.A{}
		for _, o := range ops {
			clauses = append(clauses, o)
		}
		if x.Op == filter.OpOr {
			return searchOp("compound", bson.D{{Key: "should", Value: clauses}, {Key: "minimumShouldMatch", Value: 1}}), filter.Depends, nil
		}
		return searchOp("compound", bson.D{{Key: "filter", Value: clauses}}), filter.Depends, nil
	case *filter.Raw:
		if x.Store != Dialect {
			return nil, 0, fmt.Errorf("raw filter targets %s; this store is %s", x.Store, Dialect)
		}
		return nil, 0, fmt.Errorf("a mongodb raw fragment is an MQL query, which Atlas Search cannot apply: keyword and hybrid search take no raw fragment on this store")
	case *filter.Condition:
		return compileSearchCondition(x, schema)
	}
	return nil, 0, fmt.Errorf("unsupported filter expression %T", e)
}

func compileSearchCondition(c *filter.Condition, schema *document.Schema) (op, filter.Fold, error) {
	name, typ := "", document.TypeString
	switch c.Field {
	case "sourceType":
		name = fSType
	case "sourceName":
		name = fSName
	default:
		f, err := schema.Filterable(c.Field)
		if err != nil {
			return nil, 0, err
		}
		name, typ = metaField(f.Name), f.Type
	}
	path := bson.E{Key: "path", Value: name}
	present := searchOp("exists", bson.D{path})
	one := func(o op) (op, filter.Fold, error) { return o, filter.Depends, nil }
	never := func() (op, filter.Fold, error) { return nil, filter.Never, nil }
	switch c.Op {
	case filter.OpEq, filter.OpNeq, filter.OpIn:
		if typ.IsList() {
			if c.Op == filter.OpNeq {
				return one(present) // a list never equals a scalar
			}
			return never()
		}
		wants := []any{c.Value}
		if c.Op == filter.OpIn {
			wants = c.Value.([]any)
		}
		var vals bson.A
		for _, w := range wants {
			if v, ok := filter.StoredValue(typ, w); ok {
				vals = append(vals, v)
			}
		}
		switch {
		case len(vals) == 0 && c.Op == filter.OpNeq:
			return one(present) // a value of another type is never equal
		case len(vals) == 0:
			return never()
		case c.Op == filter.OpNeq:
			return one(searchOp("compound", bson.D{
				{Key: "filter", Value: bson.A{present}},
				{Key: "mustNot", Value: bson.A{searchOp("equals", bson.D{path, {Key: "value", Value: vals[0]}})}}}))
		case len(vals) == 1:
			return one(searchOp("equals", bson.D{path, {Key: "value", Value: vals[0]}}))
		}
		return one(searchOp("in", bson.D{path, {Key: "value", Value: vals}}))
	case filter.OpGt, filter.OpGte, filter.OpLt, filter.OpLte:
		if !typ.IsNumeric() || typ.IsList() {
			return never()
		}
		v, fold := filter.NumericBound(c.Op, typ, c.Value)
		switch fold {
		case filter.Always:
			return one(present)
		case filter.Never:
			return never()
		}
		return one(searchOp("range", bson.D{path, {Key: rangeOps[c.Op][1:], Value: v}}))
	case filter.OpContainsAny, filter.OpContainsAll:
		if typ != document.TypeStringList {
			return never() // only lists of strings hold strings
		}
		var vals bson.A
		for _, v := range c.Value.([]any) {
			if s, ok := v.(string); ok {
				vals = append(vals, s)
			}
		}
		switch {
		case len(vals) == 0:
			return never()
		case c.Op == filter.OpContainsAny:
			return one(searchOp("in", bson.D{path, {Key: "value", Value: vals}}))
		}
		all := bson.A{}
		for _, v := range vals {
			all = append(all, searchOp("equals", bson.D{path, {Key: "value", Value: v}}))
		}
		return one(searchOp("compound", bson.D{{Key: "filter", Value: all}}))
	}
	return nil, 0, fmt.Errorf("unsupported operator %s", c.Op)
}

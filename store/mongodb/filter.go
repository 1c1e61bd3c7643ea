package mongodb

import (
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store/internal/where"
)

// mql is MongoDB's query language as Quarry writes it: presence by
// $exists ($ne holds for a document without the field), and equality on
// an array holding when the array holds the value.
var mql = where.Syntax{
	Dialect:    Dialect,
	SourceType: fSType,
	SourceName: fSName,
	Field:      metaField,
	Present:    where.Exists,
	Holds:      where.InOne,
	Raw: func(fragment []byte) (any, error) {
		var obj bson.D
		if err := bson.UnmarshalExtJSON(fragment, false, &obj); err != nil || len(obj) == 0 {
			return nil, errors.New("a mongodb raw fragment must be a JSON object holding an MQL query")
		}
		return obj, nil
	},
}

// visible is the MQL query of a user filter (nil for every document);
// false when the filter cannot match.
func (c *collection) visible(f filter.Expr) (any, bool, error) {
	w, fold, err := mql.Compile(f, c.cfg.Schema)
	if err != nil || fold == filter.Never {
		return nil, false, err
	}
	return w, true, nil
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
		vals := bson.A(filter.StoredValues(typ, c))
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
		return one(searchOp("range", bson.D{path, {Key: searchRange[c.Op], Value: v}}))
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

var searchRange = map[filter.Op]string{filter.OpGt: "gt", filter.OpGte: "gte", filter.OpLt: "lt", filter.OpLte: "lte"}

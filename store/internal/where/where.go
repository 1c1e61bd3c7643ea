// Package where compiles Quarry's portable filters to the JSON query
// documents of the engines that share MongoDB's operator names ($eq, $ne,
// $in, $gt, $gte, $lt, $lte, $and, $or): MongoDB's MQL, Pinecone's
// metadata filters and Chroma's where clauses. They differ in how a
// document is known to have a field and how a list of strings is known
// to hold one, which each store's Syntax says.
package where

import (
	"fmt"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
)

// Doc is a query document.
type Doc = map[string]any

// Syntax is one engine's form of the query documents.
type Syntax struct {
	// Dialect is the tag of the raw fragments the store takes.
	Dialect string
	// SourceType and SourceName are the stored fields of the built-in
	// filterable fields, which every document has.
	SourceType, SourceName string
	// Field is the stored field of a filterable schema field.
	Field func(name string) string
	// Present is a clause that a document has a schema field (stored
	// under stored), since the engines' $ne and $nin hold for a document
	// without it and Quarry's never do.
	Present func(stored, name string) any
	// Holds is a clause that a list of strings holds a value.
	Holds func(stored, value string) any
	// Raw reads a raw fragment of the store's dialect into the query it
	// stands for.
	Raw func(fragment []byte) (any, error)
}

// Compile turns a validated filter into a query document with
// filter.Matcher's meaning: a missing field matches nothing ($ne and $nin
// included), numbers compare numerically across integer and float, other
// values need the field's own type, a list never equals a scalar. The
// fold says when the filter holds for every document (and the query is
// nil) or for none.
func (s *Syntax) Compile(e filter.Expr, schema *document.Schema) (any, filter.Fold, error) {
	switch x := e.(type) {
	case nil:
		return nil, filter.Always, nil
	case *filter.Group:
		ws, fold, err := filter.FoldGroup(x, func(e filter.Expr) (any, filter.Fold, error) {
			return s.Compile(e, schema)
		})
		switch {
		case err != nil || fold != filter.Depends:
			return nil, fold, err
		case len(ws) == 1:
			return ws[0], filter.Depends, nil
		}
		op := "$and"
		if x.Op == filter.OpOr {
			op = "$or"
		}
		return Doc{op: ws}, filter.Depends, nil
	case *filter.Raw:
		if x.Store != s.Dialect {
			return nil, 0, fmt.Errorf("raw filter targets %s; this store is %s", x.Store, s.Dialect)
		}
		w, err := s.Raw(x.Fragment)
		return w, filter.Depends, err
	case *filter.Condition:
		return s.condition(x, schema)
	}
	return nil, 0, fmt.Errorf("unsupported filter expression %T", e)
}

var rangeOps = map[filter.Op]string{filter.OpGt: "$gt", filter.OpGte: "$gte", filter.OpLt: "$lt", filter.OpLte: "$lte"}

func (s *Syntax) condition(c *filter.Condition, schema *document.Schema) (any, filter.Fold, error) {
	name, typ, builtin := "", document.TypeString, true
	switch c.Field {
	case "sourceType":
		name = s.SourceType
	case "sourceName":
		name = s.SourceName
	default:
		f, err := schema.Filterable(c.Field)
		if err != nil {
			return nil, 0, err
		}
		name, typ, builtin = s.Field(f.Name), f.Type, false
	}
	one := func(w any) (any, filter.Fold, error) { return w, filter.Depends, nil }
	never := func() (any, filter.Fold, error) { return nil, filter.Never, nil }
	// present holds for a document with the field: built-in fields are
	// always there.
	var present any
	if !builtin {
		present = s.Present(name, c.Field)
	}
	with := func(w any) any {
		if present == nil {
			return w
		}
		return Doc{"$and": []any{present, w}}
	}
	orPresent := func() (any, filter.Fold, error) {
		if present == nil {
			return nil, filter.Always, nil
		}
		return one(present)
	}
	switch c.Op {
	case filter.OpEq, filter.OpNeq, filter.OpIn:
		if typ.IsList() {
			if c.Op == filter.OpNeq {
				return orPresent() // a list never equals a scalar
			}
			return never()
		}
		vals := filter.StoredValues(typ, c)
		switch {
		case len(vals) == 0 && c.Op == filter.OpNeq:
			return orPresent() // a value of another type is never equal
		case len(vals) == 0:
			return never()
		case c.Op == filter.OpNeq:
			return one(with(Doc{name: Doc{"$ne": vals[0]}}))
		case len(vals) == 1:
			return one(Doc{name: Doc{"$eq": vals[0]}})
		}
		return one(Doc{name: Doc{"$in": vals}})
	case filter.OpGt, filter.OpGte, filter.OpLt, filter.OpLte:
		if !typ.IsNumeric() || typ.IsList() {
			return never()
		}
		v, fold := filter.NumericBound(c.Op, typ, c.Value)
		switch fold {
		case filter.Always:
			return orPresent()
		case filter.Never:
			return never()
		}
		return one(Doc{name: Doc{rangeOps[c.Op]: v}})
	case filter.OpContainsAny, filter.OpContainsAll:
		if typ != document.TypeStringList {
			return never() // only lists of strings hold strings
		}
		var ws []any
		for _, v := range c.Value.([]any) {
			if str, ok := v.(string); ok {
				ws = append(ws, s.Holds(name, str))
			}
		}
		switch {
		case len(ws) == 0:
			return never()
		case len(ws) == 1:
			return one(ws[0])
		case c.Op == filter.OpContainsAny:
			return one(Doc{"$or": ws})
		}
		return one(Doc{"$and": ws})
	}
	return nil, 0, fmt.Errorf("unsupported operator %s", c.Op)
}

// Exists is the Present of engines with $exists.
func Exists(stored, _ string) any { return Doc{stored: Doc{"$exists": true}} }

// InOne is the Holds of engines whose $in on a list holds when the list
// holds one of the values.
func InOne(stored, value string) any { return Doc{stored: Doc{"$in": []string{value}}} }

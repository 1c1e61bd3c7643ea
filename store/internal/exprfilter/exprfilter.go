// Package exprfilter compiles Quarry's portable filters to the filter
// expression strings of Meilisearch and Typesense: the same tree of
// conditions, each engine spelling equality, ranges, lists and the joins
// its own way, which each store's Syntax says.
package exprfilter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
)

// Syntax is one engine's filter language.
type Syntax struct {
	// Dialect is the tag of the raw fragments the store takes: a JSON
	// string holding an expression; RawHint says so when one is not.
	Dialect, RawHint string
	// And and Or join expressions, spaces included.
	And, Or string
	// SourceType and SourceName are the stored fields of the built-in
	// filterable fields, which every document has.
	SourceType, SourceName string
	// Field is the stored field of a filterable schema field.
	Field func(name string) string
	// Present is an expression that a document has a schema field, since
	// the engines' not-equal holds for a document without it and
	// Quarry's never does.
	Present func(name string) string
	// Literal writes a stored value.
	Literal func(v any) string
	// Eq, Neq and In compare a field with literals; Range bounds it
	// (op is >, >=, < or <=).
	Eq, Neq func(field, lit string) string
	In      func(field string, lits []string) string
	Range   func(field, op, lit string) string
	// FloatEq, when set, matches a float field with any of the literals in
	// place of Eq and In.
	FloatEq func(field string, lits []string) string
}

// Compile turns a validated filter into an expression with
// filter.Matcher's meaning: a missing field matches nothing (not-equal
// included, through Present), numbers compare numerically across integer
// and float, other values need the field's own type, a list never equals
// a scalar. The fold says when the filter holds for every document (and
// the expression is empty) or for none.
func (s *Syntax) Compile(e filter.Expr, schema *document.Schema) (string, filter.Fold, error) {
	switch x := e.(type) {
	case nil:
		return "", filter.Always, nil
	case *filter.Group:
		parts, fold, err := filter.FoldGroup(x, func(e filter.Expr) (string, filter.Fold, error) {
			return s.Compile(e, schema)
		})
		switch {
		case err != nil || fold != filter.Depends:
			return "", fold, err
		case len(parts) == 1:
			return parts[0], filter.Depends, nil
		}
		sep := s.And
		if x.Op == filter.OpOr {
			sep = s.Or
		}
		return "(" + strings.Join(parts, sep) + ")", filter.Depends, nil
	case *filter.Raw:
		if x.Store != s.Dialect {
			return "", 0, fmt.Errorf("raw filter targets %s; this store is %s", x.Store, s.Dialect)
		}
		var expr string
		if err := json.NewDecoder(bytes.NewReader(x.Fragment)).Decode(&expr); err != nil || strings.TrimSpace(expr) == "" {
			return "", 0, errors.New(s.RawHint)
		}
		return "(" + expr + ")", filter.Depends, nil
	case *filter.Condition:
		return s.condition(x, schema)
	}
	return "", 0, fmt.Errorf("unsupported filter expression %T", e)
}

// Join joins expressions with And, skipping empty ones.
func (s *Syntax) Join(parts ...string) string {
	var kept []string
	for _, p := range parts {
		if p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, s.And)
}

var rangeOps = map[filter.Op]string{filter.OpGt: ">", filter.OpGte: ">=", filter.OpLt: "<", filter.OpLte: "<="}

func (s *Syntax) condition(c *filter.Condition, schema *document.Schema) (string, filter.Fold, error) {
	name, typ, builtin := "", document.TypeString, true
	switch c.Field {
	case "sourceType":
		name = s.SourceType
	case "sourceName":
		name = s.SourceName
	default:
		f, err := schema.Filterable(c.Field)
		if err != nil {
			return "", 0, err
		}
		name, typ, builtin = s.Field(f.Name), f.Type, false
	}
	one := func(expr string) (string, filter.Fold, error) { return expr, filter.Depends, nil }
	never := func() (string, filter.Fold, error) { return "", filter.Never, nil }
	// present holds for a document with the field: built-in fields are
	// always there.
	present := ""
	if !builtin {
		present = s.Present(c.Field)
	}
	orPresent := func() (string, filter.Fold, error) {
		if present == "" {
			return "", filter.Always, nil
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
		var vals []string
		for _, v := range filter.StoredValues(typ, c) {
			vals = append(vals, s.Literal(v))
		}
		switch {
		case len(vals) == 0 && c.Op == filter.OpNeq:
			return orPresent() // a value of another type is never equal
		case len(vals) == 0:
			return never()
		case c.Op == filter.OpNeq:
			if present == "" {
				return one(s.Neq(name, vals[0]))
			}
			return one("(" + present + s.And + s.Neq(name, vals[0]) + ")")
		case typ == document.TypeFloat && s.FloatEq != nil:
			return one(s.FloatEq(name, vals))
		case len(vals) == 1:
			return one(s.Eq(name, vals[0]))
		}
		return one(s.In(name, vals))
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
		return one(s.Range(name, rangeOps[c.Op], s.Literal(v)))
	case filter.OpContainsAny, filter.OpContainsAll:
		if typ != document.TypeStringList {
			return never() // only lists of strings hold strings
		}
		var vals []string
		for _, v := range c.Value.([]any) {
			if str, ok := v.(string); ok {
				vals = append(vals, s.Literal(str))
			}
		}
		switch {
		case len(vals) == 0:
			return never()
		case len(vals) == 1:
			return one(s.Eq(name, vals[0]))
		case c.Op == filter.OpContainsAny:
			return one(s.In(name, vals)) // a list matches when an element does
		}
		all := make([]string, len(vals))
		for i, v := range vals {
			all[i] = s.Eq(name, v)
		}
		return one("(" + strings.Join(all, s.And) + ")")
	}
	return "", 0, fmt.Errorf("unsupported operator %s", c.Op)
}

package filter

import (
	"fmt"
	"strings"
)

// shortOps maps the short syntax's operators to canonical ones.
var shortOps = map[string]Op{
	"$eq": OpEq, "$ne": OpNeq, "$in": OpIn,
	"$gt": OpGt, "$gte": OpGte, "$lt": OpLt, "$lte": OpLte,
	"$containsAny": OpContainsAny, "$containsAll": OpContainsAll,
}

// ParseShort parses the short, Mongo-like JSON form:
//
//	{"tenant":"acme","$or":[{"year":{"$gte":2025}},{"tags":{"$containsAny":["go","rag"]}}]}
//
// Keys of one object AND together in document order; a bare value means
// $eq; an operator object may hold several operators ({"year":{"$gte":2020,
// "$lt":2026}} is two conditions); $and and $or take arrays of such objects;
// $raw takes {"store","fragment"}.
func ParseShort(s string) (Expr, error) {
	v, err := decodeOrdered(s, SyntaxShort)
	if err != nil {
		return nil, err
	}
	e, err := fromShort(v, "$")
	if err != nil {
		return nil, &SyntaxError{Syntax: SyntaxShort, Msg: trimPrefix(err), Err: asFilterError(err)}
	}
	if err := Check(e); err != nil {
		return nil, &SyntaxError{Syntax: SyntaxShort, Msg: trimPrefix(err), Err: err}
	}
	return e, nil
}

func fromShort(v any, path string) (Expr, error) {
	obj, ok := v.(*object)
	if !ok {
		return nil, fmt.Errorf("%sa short filter must be a JSON object, got %s", pfx(path), jsonTypeName(v))
	}
	if len(obj.Keys) == 0 {
		return nil, errorf("", OpAnd, ReasonEmptyGroup, "%san empty object is an empty and group; give at least one condition", pfx(path))
	}
	var parts []Expr
	for i, k := range obj.Keys {
		val := obj.Vals[i]
		kp := path + "." + k
		switch {
		case k == "$and" || k == "$or":
			list, ok := val.([]any)
			if !ok {
				return nil, fmt.Errorf("%s%s takes an array of filter objects", pfx(kp), k)
			}
			op := OpAnd
			if k == "$or" {
				op = OpOr
			}
			if len(list) == 0 {
				return nil, errorf("", op, ReasonEmptyGroup, "%san %s group requires at least one condition", pfx(kp), op)
			}
			children := make([]Expr, len(list))
			for j, c := range list {
				e, err := fromShort(c, fmt.Sprintf("%s[%d]", kp, j))
				if err != nil {
					return nil, err
				}
				children[j] = e
			}
			parts = append(parts, group(op, children))
		case k == "$raw":
			ro, ok := val.(*object)
			if !ok {
				return nil, fmt.Errorf("%s$raw takes {\"store\", \"fragment\"}", pfx(kp))
			}
			if err := only(ro, kp, "store", "fragment"); err != nil {
				return nil, err
			}
			st, _ := ro.Get("store")
			ss, ok := st.(string)
			if !ok || ss == "" {
				return nil, fmt.Errorf("%s$raw needs a non-empty \"store\"", pfx(kp))
			}
			frag, ok := ro.Get("fragment")
			if !ok {
				return nil, fmt.Errorf("%s$raw needs a \"fragment\"", pfx(kp))
			}
			parts = append(parts, &Raw{Store: ss, Fragment: marshalOrdered(frag)})
		case strings.HasPrefix(k, "$"):
			return nil, errorf("", Op(k), ReasonUnknownOperator,
				"%sunknown top-level operator %q (use a field name, $and, $or or $raw)", pfx(kp), k)
		default:
			conds, err := shortField(k, val, kp)
			if err != nil {
				return nil, err
			}
			parts = append(parts, conds...)
		}
	}
	return group(OpAnd, parts), nil
}

// shortField turns `field: value` or `field: {"$op": value, …}` into
// conditions.
func shortField(field string, val any, path string) ([]Expr, error) {
	obj, ok := val.(*object)
	if !ok {
		if _, isList := val.([]any); isList {
			return nil, errorf(field, OpEq, ReasonValue,
				"%sa bare list is ambiguous; use {\"$in\": [...]} or {\"$containsAny\": [...]} on field %q", pfx(path), field)
		}
		return []Expr{cond(OpEq, field, plain(val))}, nil
	}
	if len(obj.Keys) == 0 {
		return nil, errorf(field, "", ReasonValue, "%sempty operator object for field %q", pfx(path), field)
	}
	out := make([]Expr, 0, len(obj.Keys))
	for i, k := range obj.Keys {
		op, ok := shortOps[k]
		if !ok {
			return nil, errorf(field, Op(k), ReasonUnknownOperator,
				"%sunknown operator %q on field %q (use $eq $ne $in $gt $gte $lt $lte $containsAny $containsAll)", pfx(path), k, field)
		}
		out = append(out, cond(op, field, plain(obj.Vals[i])))
	}
	return out, nil
}

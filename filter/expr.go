// Package filter is Quarry's portable metadata filter language: a typed
// expression tree, its three syntaxes (canonical JSON, short Mongo-like JSON
// and a text form for the command line), canonical printing, validation
// against a collection schema, the merge of mandatory scopes, and the
// in-memory evaluator that is the reference semantics for every store
// (SEMANTICS §2).
//
// Build trees with the constructors:
//
//	f := filter.And(filter.Eq("tenant", "acme"),
//		filter.Or(filter.Gte("year", 2025), filter.ContainsAny("tags", "go", "rag")))
//
// Constructors never fail; Check (run by every parser, by Validate and by
// NewMatcher) reports a malformed tree, naming the field, operator and rule.
package filter

import (
	"encoding/json"
	"reflect"
	"time"

	"github.com/quarry-rag/quarry/document"
)

// Op is a filter operator.
type Op string

// Condition operators, group operators and the raw fragment.
const (
	OpEq          Op = "eq"
	OpNeq         Op = "neq"
	OpIn          Op = "in"
	OpGt          Op = "gt"
	OpGte         Op = "gte"
	OpLt          Op = "lt"
	OpLte         Op = "lte"
	OpContainsAny Op = "contains_any"
	OpContainsAll Op = "contains_all"
	OpAnd         Op = "and"
	OpOr          Op = "or"
	OpRaw         Op = "raw"
)

// IsRange reports whether op is gt, gte, lt or lte.
func (op Op) IsRange() bool { return op == OpGt || op == OpGte || op == OpLt || op == OpLte }

// IsList reports whether op takes a list value (in, contains_any, contains_all).
func (op Op) IsList() bool { return op == OpIn || op == OpContainsAny || op == OpContainsAll }

// IsContains reports whether op is contains_any or contains_all.
func (op Op) IsContains() bool { return op == OpContainsAny || op == OpContainsAll }

func (op Op) isCondition() bool {
	switch op {
	case OpEq, OpNeq, OpIn, OpGt, OpGte, OpLt, OpLte, OpContainsAny, OpContainsAll:
		return true
	}
	return false
}

// Expr is a node of a filter tree: *Condition, *Group or *Raw. The set is
// closed; a nil Expr means "no filter".
type Expr interface {
	// Operator returns the node's operator.
	Operator() Op
	expr()
}

// Condition compares one field with a value. Value holds canonical values
// only: string, bool, int64, float64, or []any of those for list operators.
// Constructors and parsers normalise into this form.
type Condition struct {
	Op    Op
	Field string
	Value any
}

// Group combines conditions with and/or. Constructors flatten direct
// children with the same operator and unwrap single-child groups.
type Group struct {
	Op         Op
	Conditions []Expr
}

// Raw is a store-specific fragment passed through unvalidated. Only the store
// it is tagged for accepts it; stores that evaluate in process reject it.
type Raw struct {
	Store string
	// Fragment is the fragment as compact JSON (a JSON string for textual
	// fragments).
	Fragment json.RawMessage
}

func (*Condition) expr() {}
func (*Group) expr()     {}
func (*Raw) expr()       {}

// Operator implements Expr.
func (c *Condition) Operator() Op { return c.Op }

// Operator implements Expr.
func (g *Group) Operator() Op { return g.Op }

// Operator implements Expr.
func (*Raw) Operator() Op { return OpRaw }

// Eq matches documents whose field equals v.
func Eq(field string, v any) *Condition { return cond(OpEq, field, v) }

// Neq matches documents whose field is present and differs from v. Schema
// validation allows it only on required fields.
func Neq(field string, v any) *Condition { return cond(OpNeq, field, v) }

// Gt matches documents whose numeric field is greater than v. A time.Time or
// an RFC 3339 string is converted to Unix seconds.
func Gt(field string, v any) *Condition { return cond(OpGt, field, v) }

// Gte is Gt with equality.
func Gte(field string, v any) *Condition { return cond(OpGte, field, v) }

// Lt matches documents whose numeric field is less than v.
func Lt(field string, v any) *Condition { return cond(OpLt, field, v) }

// Lte is Lt with equality.
func Lte(field string, v any) *Condition { return cond(OpLte, field, v) }

// In matches documents whose field equals any of values.
func In(field string, values ...any) *Condition { return cond(OpIn, field, values) }

// ContainsAny matches documents whose array field holds at least one of values.
func ContainsAny(field string, values ...string) *Condition {
	return cond(OpContainsAny, field, stringsToAny(values))
}

// ContainsAll matches documents whose array field holds every one of values.
func ContainsAll(field string, values ...string) *Condition {
	return cond(OpContainsAll, field, stringsToAny(values))
}

// NewCondition builds a condition from an operator name, as parsers do.
func NewCondition(op Op, field string, v any) *Condition { return cond(op, field, v) }

// And matches when every child matches. Nil children are dropped, nested
// and-groups are flattened and a single child is returned unchanged. And()
// with no children is an empty group, which Check rejects.
func And(exprs ...Expr) Expr { return group(OpAnd, exprs) }

// Or matches when any child matches; it flattens like And.
func Or(exprs ...Expr) Expr { return group(OpOr, exprs) }

// NewRaw tags a store-specific fragment. A string fragment is kept as a JSON
// string; any other value is marshalled to JSON (a value that cannot be is
// kept as null, which Check rejects).
func NewRaw(store string, fragment any) *Raw {
	var b []byte
	switch f := fragment.(type) {
	case json.RawMessage:
		b = compactJSON(f)
	default:
		var err error
		b, err = json.Marshal(f)
		if err != nil {
			b = nil
		}
	}
	return &Raw{Store: store, Fragment: b}
}

// Merge combines mandatory scopes with AND (SEMANTICS §2): nil scopes are
// dropped; none left gives nil; one left is returned unchanged; otherwise
// the and of them. A caller's or-group stays nested, so it can never relax
// another scope.
func Merge(scopes ...Expr) Expr {
	var kept []Expr
	for _, s := range scopes {
		if !isNil(s) {
			kept = append(kept, s)
		}
	}
	switch len(kept) {
	case 0:
		return nil
	case 1:
		return kept[0]
	}
	return group(OpAnd, kept)
}

func isNil(e Expr) bool {
	if e == nil {
		return true
	}
	switch x := e.(type) {
	case *Condition:
		return x == nil
	case *Group:
		return x == nil
	case *Raw:
		return x == nil
	}
	return false
}

func group(op Op, exprs []Expr) Expr {
	var out []Expr
	for _, e := range exprs {
		if isNil(e) {
			continue
		}
		if g, ok := e.(*Group); ok && g.Op == op && len(g.Conditions) > 0 {
			out = append(out, g.Conditions...)
			continue
		}
		out = append(out, e)
	}
	if len(out) == 1 {
		return out[0]
	}
	return &Group{Op: op, Conditions: out}
}

func cond(op Op, field string, v any) *Condition {
	return &Condition{Op: op, Field: field, Value: normalize(op, v)}
}

func stringsToAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// normalize converts v into canonical values: numbers to int64 or float64,
// named types to their underlying kind, time.Time to Unix seconds, and, in
// ranges and in, RFC 3339 strings to Unix seconds. Values that cannot be
// normalised are kept as given so Check can name them.
func normalize(op Op, v any) any {
	if op.IsList() {
		var elems []any
		switch x := v.(type) {
		case []any:
			elems = x
		case nil:
			return nil
		default:
			rv := reflect.ValueOf(v)
			if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
				return normalizeScalar(op, v)
			}
			elems = make([]any, rv.Len())
			for i := range elems {
				elems[i] = rv.Index(i).Interface()
			}
		}
		out := make([]any, len(elems))
		for i, e := range elems {
			out[i] = normalizeScalar(op, e)
		}
		return out
	}
	return normalizeScalar(op, v)
}

func normalizeScalar(op Op, v any) any {
	switch x := v.(type) {
	case nil, bool, int64, float64:
		return v
	case string:
		if op.IsRange() || op == OpIn {
			if t, ok := parseTimestamp(x); ok {
				return timeValue(t)
			}
		}
		return x
	case time.Time:
		return timeValue(x)
	case *time.Time:
		if x == nil {
			return nil
		}
		return timeValue(*x)
	case json.Number:
		f, i, isInt, ok := document.Number(x)
		if !ok {
			return v
		}
		if isInt {
			return i
		}
		return f
	}
	if f, i, isInt, ok := document.Number(v); ok {
		if isInt {
			return i
		}
		return f
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.String:
		return normalizeScalar(op, rv.String())
	case reflect.Bool:
		return rv.Bool()
	}
	return v
}

// parseTimestamp accepts RFC 3339 instants (with or without fractional
// seconds) only; a bare date stays a string.
func parseTimestamp(s string) (time.Time, bool) {
	if len(s) < 20 || s[4] != '-' || s[10] != 'T' && s[10] != 't' {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, false
	}
	return t, true
}

// timeValue is Unix seconds: an int64, or a float64 when the instant has a
// fractional second.
func timeValue(t time.Time) any {
	if t.Nanosecond() == 0 {
		return t.Unix()
	}
	return float64(t.UnixNano()) / 1e9
}

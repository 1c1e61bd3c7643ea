package filter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/internal/jsonorder"
)

// MarshalJSON prints the canonical JSON of a condition.
func (c *Condition) MarshalJSON() ([]byte, error) { return marshal(c) }

// MarshalJSON prints the canonical JSON of a group.
func (g *Group) MarshalJSON() ([]byte, error) { return marshal(g) }

// MarshalJSON prints the canonical JSON of a raw fragment.
func (r *Raw) MarshalJSON() ([]byte, error) { return marshal(r) }

func marshal(e Expr) ([]byte, error) {
	if err := Check(e); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	writeExpr(&b, e)
	return b.Bytes(), nil
}

// Format returns the canonical JSON of e (SEMANTICS §2): conditions as
// {"operator","field","value"} in that key order, groups as
// {"operator","conditions"}, single-child groups unwrapped, children in input
// order, integers without a fraction and floats with one. A nil filter
// formats as "null". e must be well formed (see Check).
func Format(e Expr) (string, error) {
	if isNil(e) {
		return "null", nil
	}
	b, err := marshal(e)
	return string(b), err
}

func writeExpr(b *bytes.Buffer, e Expr) {
	switch x := e.(type) {
	case *Condition:
		b.WriteString(`{"operator":`)
		jsonorder.WriteString(b, string(x.Op))
		b.WriteString(`,"field":`)
		jsonorder.WriteString(b, x.Field)
		b.WriteString(`,"value":`)
		writeValue(b, x.Value)
		b.WriteByte('}')
	case *Group:
		if len(x.Conditions) == 1 {
			writeExpr(b, x.Conditions[0])
			return
		}
		b.WriteString(`{"operator":`)
		jsonorder.WriteString(b, string(x.Op))
		b.WriteString(`,"conditions":[`)
		for i, c := range x.Conditions {
			if i > 0 {
				b.WriteByte(',')
			}
			writeExpr(b, c)
		}
		b.WriteString("]}")
	case *Raw:
		b.WriteString(`{"operator":"raw","store":`)
		jsonorder.WriteString(b, x.Store)
		b.WriteString(`,"fragment":`)
		b.Write(x.Fragment)
		b.WriteByte('}')
	}
}

func writeValue(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case string:
		jsonorder.WriteString(b, x)
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		b.WriteString(document.FormatFloat(x))
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeValue(b, e)
		}
		b.WriteByte(']')
	default:
		b.WriteString("null")
	}
}

// ParseJSON parses the canonical JSON form. Keys may come in any order;
// unknown keys and unknown operators are errors. The tree is normalised
// (groups flattened, single-child groups unwrapped) and checked.
func ParseJSON(s string) (Expr, error) {
	v, err := decodeOrdered(s, SyntaxJSON)
	if err != nil {
		return nil, err
	}
	e, err := fromCanonical(v, "$")
	if err != nil {
		return nil, &SyntaxError{Syntax: SyntaxJSON, Msg: trimPrefix(err), Err: asFilterError(err)}
	}
	if err := Check(e); err != nil {
		return nil, &SyntaxError{Syntax: SyntaxJSON, Msg: trimPrefix(err), Err: err}
	}
	return e, nil
}

func asFilterError(err error) error {
	var fe *Error
	if errors.As(err, &fe) {
		return fe
	}
	return nil
}

func trimPrefix(err error) string { return strings.TrimPrefix(err.Error(), "filter: ") }

func fromCanonical(v any, path string) (Expr, error) {
	obj, ok := v.(*object)
	if !ok {
		return nil, fmt.Errorf("%sa filter expression must be a JSON object, got %s", pfx(path), jsonTypeName(v))
	}
	opV, ok := obj.Get("operator")
	if !ok {
		return nil, fmt.Errorf("%smissing \"operator\"", pfx(path))
	}
	opS, ok := opV.(string)
	if !ok {
		return nil, fmt.Errorf("%s\"operator\" must be a string", pfx(path))
	}
	op := Op(opS)
	switch {
	case op == OpAnd || op == OpOr:
		if err := only(obj, path, "operator", "conditions"); err != nil {
			return nil, err
		}
		cv, ok := obj.Get("conditions")
		if !ok {
			return nil, fmt.Errorf("%s%s group needs \"conditions\"", pfx(path), op)
		}
		list, ok := cv.([]any)
		if !ok {
			return nil, fmt.Errorf("%s\"conditions\" must be an array", pfx(path))
		}
		if len(list) == 0 {
			return nil, errorf("", op, ReasonEmptyGroup, "%san %s group requires at least one condition", pfx(path), op)
		}
		children := make([]Expr, len(list))
		for i, c := range list {
			e, err := fromCanonical(c, fmt.Sprintf("%s.conditions[%d]", path, i))
			if err != nil {
				return nil, err
			}
			children[i] = e
		}
		return group(op, children), nil
	case op == OpRaw:
		if err := only(obj, path, "operator", "store", "fragment"); err != nil {
			return nil, err
		}
		store, _ := obj.Get("store")
		ss, ok := store.(string)
		if !ok || ss == "" {
			return nil, fmt.Errorf("%sraw fragment needs a non-empty \"store\"", pfx(path))
		}
		frag, ok := obj.Get("fragment")
		if !ok {
			return nil, fmt.Errorf("%sraw fragment needs a \"fragment\"", pfx(path))
		}
		return &Raw{Store: ss, Fragment: marshalOrdered(frag)}, nil
	case op.isCondition():
		if err := only(obj, path, "operator", "field", "value"); err != nil {
			return nil, err
		}
		fv, _ := obj.Get("field")
		field, ok := fv.(string)
		if !ok {
			return nil, fmt.Errorf("%s%s condition needs a string \"field\"", pfx(path), op)
		}
		val, ok := obj.Get("value")
		if !ok {
			return nil, errorf(field, op, ReasonNull, "%s%s condition on %q needs a \"value\"", pfx(path), op, field)
		}
		return cond(op, field, plain(val)), nil
	}
	return nil, errorf("", op, ReasonUnknownOperator, "%sunsupported filter expression: operator %q", pfx(path), opS)
}

// Parse reads a filter in any of the three syntaxes: JSON when the input
// starts with "{" (canonical when its top-level object has an "operator" key
// naming a filter operator, short otherwise), the text form otherwise. Blank
// input is "no filter" (nil, nil).
func Parse(s string) (Expr, error) {
	t := strings.TrimSpace(s)
	if t == "" || t == "null" {
		return nil, nil
	}
	if t[0] != '{' {
		return ParseText(s)
	}
	v, err := decodeOrdered(t, SyntaxJSON)
	if err != nil {
		return nil, err
	}
	if obj, ok := v.(*object); ok && isCanonical(obj) {
		return ParseJSON(t)
	}
	return ParseShort(t)
}

// object is a JSON object with its keys in document order, which the short
// syntax needs (keys at one level AND together in that order).
type object = jsonorder.Object

// only rejects keys other than allowed.
func only(o *object, path string, allowed ...string) error {
outer:
	for _, k := range o.Keys {
		for _, a := range allowed {
			if k == a {
				continue outer
			}
		}
		return fmt.Errorf("%sunknown key %q (expected %s)", pfx(path), k, strings.Join(allowed, ", "))
	}
	return nil
}

// isCanonical tells a canonical expression from a short-form object: a
// canonical object has a string "operator" and at least one other canonical
// key. {"operator":"eq"} alone is a short filter on a field named operator.
func isCanonical(o *object) bool {
	v, ok := o.Get("operator")
	if !ok {
		return false
	}
	if _, ok := v.(string); !ok {
		return false
	}
	for _, k := range o.Keys {
		switch k {
		case "field", "value", "conditions", "store", "fragment":
			return true
		}
	}
	return false
}

// decodeOrdered decodes JSON keeping object key order and number literals.
func decodeOrdered(s string, syn Syntax) (any, error) {
	v, dec, err := jsonorder.Decode(s)
	if errors.Is(err, jsonorder.ErrTrailing) {
		off := int(dec.Offset())
		return nil, &SyntaxError{Syntax: syn, Offset: off, Column: column(s, off), Msg: "unexpected data after the filter"}
	}
	if err != nil {
		return nil, jsonSyntaxError(s, syn, dec.Offset(), err)
	}
	return v, nil
}

func jsonSyntaxError(s string, syn Syntax, offset int64, err error) error {
	var se *json.SyntaxError
	off := int(offset)
	if errors.As(err, &se) {
		off = int(se.Offset)
	}
	msg := err.Error()
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		msg = "unexpected end of input"
		off = len(s)
	}
	return &SyntaxError{Syntax: syn, Offset: off, Column: column(s, off), Msg: "invalid JSON: " + msg}
}

// plain converts ordered objects back into maps (values never legitimately
// hold objects; Check reports them).
func plain(v any) any {
	switch x := v.(type) {
	case *object:
		m := make(map[string]any, len(x.Keys))
		for i, k := range x.Keys {
			m[k] = plain(x.Vals[i])
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e)
		}
		return out
	case json.Number:
		f, i, isInt, ok := document.Number(x)
		if !ok || math.IsInf(f, 0) {
			return x // out of range: Check names it
		}
		if isInt {
			return i
		}
		return f
	}
	return v
}

// marshalOrdered prints a decoded value back to compact JSON, keeping key
// order and number literals, for raw fragments.
func marshalOrdered(v any) json.RawMessage {
	return jsonorder.Compact(v, writeValue)
}

func compactJSON(b []byte) []byte {
	v, err := decodeOrdered(string(b), SyntaxJSON)
	if err != nil {
		return nil
	}
	return marshalOrdered(v)
}

func jsonTypeName(v any) string {
	switch v.(type) {
	case *object:
		return "object"
	case []any:
		return "array"
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "bool"
	case json.Number:
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

// column converts a byte offset into a 1-based character column.
func column(s string, off int) int {
	if off > len(s) {
		off = len(s)
	}
	if off < 0 {
		off = 0
	}
	return len([]rune(s[:off])) + 1
}

// pfx prefixes a message with the JSON path of the offending part; the root
// needs no prefix.
func pfx(path string) string {
	if path == "$" {
		return ""
	}
	return path + ": "
}

// ParseValue reads a filter carried as a JSON value in an API request: a
// JSON string holds a filter in any syntax (Parse), an object is JSON in
// either form with its keys' order kept; null or nothing is "no filter".
func ParseValue(raw []byte) (Expr, error) {
	t := strings.TrimSpace(string(raw))
	if t == "" || t == "null" {
		return nil, nil
	}
	if t[0] == '"' {
		var s string
		if err := json.Unmarshal([]byte(t), &s); err != nil {
			return nil, fmt.Errorf("filter: %w", err)
		}
		return Parse(s)
	}
	if t[0] != '{' {
		return nil, &Error{Reason: ReasonSyntax, Msg: "a filter is a string (text or JSON) or a JSON object"}
	}
	return Parse(t)
}

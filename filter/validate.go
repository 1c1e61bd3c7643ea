package filter

import (
	"errors"
	"fmt"

	"github.com/quarry-rag/quarry/document"
)

// Validate checks e against a collection schema before any I/O (SEMANTICS
// §2), condition by condition in order. For each condition:
//  1. the field is sourceType, sourceName, or declared and filterable;
//  2. neq is used only on a required field;
//  3. contains_* only on a string[] field, and no other operator on a list field;
//  4. ranges only on integer or float fields;
//  5. every value has the field's type.
//
// Raw fragments are not validated here; a store refuses those it cannot run
// (see RejectRaw). A nil schema knows only the built-in fields. A nil filter
// is valid.
func Validate(e Expr, s *document.Schema) error {
	if err := Check(e); err != nil {
		return err
	}
	return validate(e, s)
}

func validate(e Expr, s *document.Schema) error {
	switch x := e.(type) {
	case nil:
		return nil
	case *Group:
		for _, c := range x.Conditions {
			if err := validate(c, s); err != nil {
				return err
			}
		}
		return nil
	case *Raw:
		return nil
	case *Condition:
		return validateCondition(x, s)
	}
	return nil
}

func validateCondition(c *Condition, s *document.Schema) error {
	f, err := s.Filterable(c.Field)
	if err != nil {
		var se *document.SchemaError
		r := ReasonUndeclared
		if errors.As(err, &se) && se.Reason == document.ReasonNotFilterable {
			r = ReasonNotFilterable
		}
		return &Error{Field: c.Field, Op: c.Op, Reason: r, Msg: err.Error()}
	}
	if c.Op == OpNeq && !f.Required {
		return errorf(c.Field, c.Op, ReasonNeqOptional,
			"neq on field %q requires the field to be declared required, so a missing field cannot match differently across stores; declare it required or filter with eq/in", c.Field)
	}
	if c.Op.IsContains() && f.Type != document.TypeStringList {
		return errorf(c.Field, c.Op, ReasonNotList,
			"%s requires a filterable string[] field; %q is %s", c.Op, c.Field, f.Type)
	}
	if !c.Op.IsContains() && f.Type.IsList() {
		return errorf(c.Field, c.Op, ReasonListField,
			"list field %q requires contains_any or contains_all, not %s", c.Field, c.Op)
	}
	if c.Op.IsRange() && !f.Type.IsNumeric() {
		return errorf(c.Field, c.Op, ReasonNotNumeric,
			"%s requires a numeric field; %q is %s", c.Op, c.Field, f.Type)
	}
	want := f.Type.Elem()
	values := []any{c.Value}
	if c.Op.IsList() {
		values, _ = c.Value.([]any)
	}
	for _, v := range values {
		if !valueHasType(want, v) {
			return errorf(c.Field, c.Op, ReasonType,
				"filter field %q expects %s; %s given", c.Field, want, describeType(v))
		}
	}
	return nil
}

// valueHasType is the filter-side type check: a float field also accepts an
// integer value, and an integer field accepts an integral float only when
// written as an integer (so 2026.0 is a float, as in documents).
func valueHasType(t document.FieldType, v any) bool {
	switch t {
	case document.TypeString:
		_, ok := v.(string)
		return ok
	case document.TypeBoolean:
		_, ok := v.(bool)
		return ok
	case document.TypeInteger:
		_, ok := v.(int64)
		return ok
	case document.TypeFloat:
		switch v.(type) {
		case int64, float64:
			return true
		}
	}
	return false
}

func describeType(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("string %q", x)
	case int64:
		return fmt.Sprintf("integer %d", x)
	case float64:
		return "float " + document.FormatFloat(x)
	case bool:
		return fmt.Sprintf("bool %t", x)
	}
	return document.TypeName(v)
}

// RejectRaw returns an error if e holds a raw fragment anywhere in its tree
// that is not tagged for store (pass "" for stores that evaluate in process
// and accept none). It inspects the whole tree up front, so the answer does
// not depend on data or on short-circuiting.
func RejectRaw(e Expr, store string) error {
	var found *Raw
	walk(e, func(x Expr) bool {
		if r, ok := x.(*Raw); ok && (store == "" || r.Store != store) {
			found = r
			return false
		}
		return true
	})
	if found == nil {
		return nil
	}
	if store == "" {
		return errorf("", OpRaw, ReasonRaw, "raw filter targets %s; it cannot be evaluated in process (use a portable condition)", found.Store)
	}
	return errorf("", OpRaw, ReasonRaw, "raw filter targets %s; this store is %s", found.Store, store)
}

// walk visits e depth-first in order until fn returns false.
func walk(e Expr, fn func(Expr) bool) bool {
	if isNil(e) {
		return true
	}
	if !fn(e) {
		return false
	}
	if g, ok := e.(*Group); ok {
		for _, c := range g.Conditions {
			if !walk(c, fn) {
				return false
			}
		}
	}
	return true
}

// Fields returns the distinct field names e refers to, in first-use order.
func Fields(e Expr) []string {
	var out []string
	seen := map[string]bool{}
	walk(e, func(x Expr) bool {
		if c, ok := x.(*Condition); ok && !seen[c.Field] {
			seen[c.Field] = true
			out = append(out, c.Field)
		}
		return true
	})
	return out
}

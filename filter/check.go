package filter

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/quarry-rag/quarry/document"
)

// Check reports whether e is well formed, without a schema: every condition
// has a field and a known operator; scalar operators take one non-null
// scalar; ranges take a number; in takes a non-empty list of scalars;
// contains_* a non-empty list of strings; groups are non-empty; raw
// fragments name their store. A nil filter is well formed.
func Check(e Expr) error {
	if isNil(e) {
		return nil
	}
	switch x := e.(type) {
	case *Condition:
		return checkCondition(x)
	case *Group:
		if x.Op != OpAnd && x.Op != OpOr {
			return errorf("", x.Op, ReasonUnknownOperator, "unsupported filter expression: group operator %q (use and or or)", string(x.Op))
		}
		if len(x.Conditions) == 0 {
			return errorf("", x.Op, ReasonEmptyGroup, "an %s group requires at least one condition", x.Op)
		}
		for _, c := range x.Conditions {
			if isNil(c) {
				return errorf("", x.Op, ReasonEmptyGroup, "an %s group holds a nil condition", x.Op)
			}
			if err := Check(c); err != nil {
				return err
			}
		}
		return nil
	case *Raw:
		if x.Store == "" {
			return errorf("", OpRaw, ReasonValue, "a raw fragment must name the store it is written for")
		}
		if len(x.Fragment) == 0 || string(x.Fragment) == "null" {
			return errorf("", OpRaw, ReasonValue, "raw fragment for %s is empty", x.Store)
		}
		return nil
	}
	return errorf("", "", ReasonUnknownOperator, "unsupported filter expression: %T", e)
}

func checkCondition(c *Condition) error {
	if !c.Op.isCondition() {
		return errorf(c.Field, c.Op, ReasonUnknownOperator, "unsupported filter expression: operator %q on field %q", string(c.Op), c.Field)
	}
	if c.Field == "" {
		return errorf("", c.Op, ReasonEmptyField, "%s condition has an empty field name", c.Op)
	}
	if !utf8.ValidString(c.Field) {
		return errorf(c.Field, c.Op, ReasonEmptyField, "field name %q is not valid UTF-8", c.Field)
	}
	if c.Op.IsList() {
		list, ok := c.Value.([]any)
		if !ok {
			if c.Value == nil {
				return errorf(c.Field, c.Op, ReasonNull, "%s on field %q needs a list of values, got null", c.Op, c.Field)
			}
			return errorf(c.Field, c.Op, ReasonValue, "%s on field %q needs a list of values, got %s", c.Op, c.Field, document.TypeName(c.Value))
		}
		if len(list) == 0 {
			return errorf(c.Field, c.Op, ReasonEmptyList, "%s on field %q requires at least one value", c.Op, c.Field)
		}
		for _, v := range list {
			if err := checkScalar(c, v); err != nil {
				return err
			}
			if c.Op.IsContains() {
				if _, ok := v.(string); !ok {
					return errorf(c.Field, c.Op, ReasonValue, "%s on field %q accepts strings only; %s given", c.Op, c.Field, describe(v))
				}
			}
		}
		return nil
	}
	if err := checkScalar(c, c.Value); err != nil {
		return err
	}
	if c.Op.IsRange() {
		if _, ok := c.Value.(string); ok {
			return errorf(c.Field, c.Op, ReasonValue, "%s on field %q needs a number or an RFC 3339 timestamp; %s given", c.Op, c.Field, describe(c.Value))
		}
		if _, ok := c.Value.(bool); ok {
			return errorf(c.Field, c.Op, ReasonValue, "%s on field %q needs a number or an RFC 3339 timestamp; bool given", c.Op, c.Field)
		}
	}
	return nil
}

// checkScalar accepts the canonical scalars: string (valid UTF-8), bool,
// int64 and finite float64.
func checkScalar(c *Condition, v any) error {
	switch x := v.(type) {
	case nil:
		return errorf(c.Field, c.Op, ReasonNull, "null is never a valid comparison value (%s on field %q)", c.Op, c.Field)
	case string:
		if !utf8.ValidString(x) {
			return errorf(c.Field, c.Op, ReasonValue, "%s on field %q: value is not valid UTF-8", c.Op, c.Field)
		}
		return nil
	case bool, int64:
		return nil
	case json.Number:
		return errorf(c.Field, c.Op, ReasonValue, "%s on field %q: number %s is out of range", c.Op, c.Field, string(x))
	case float64:
		if x != x || x > maxFloat || x < -maxFloat {
			return errorf(c.Field, c.Op, ReasonValue, "%s on field %q: value %v is not a finite number", c.Op, c.Field, x)
		}
		return nil
	}
	return errorf(c.Field, c.Op, ReasonValue, "%s on field %q accepts scalar values only; %s given", c.Op, c.Field, describe(v))
}

const maxFloat = 1.7976931348623157e308

func describe(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("string %q", x)
	case nil:
		return "null"
	}
	return document.TypeName(v)
}

package filter

import (
	"fmt"
	"strings"
)

// Reason classifies a filter error so callers can branch on it.
type Reason string

// Reasons carried by *Error.
const (
	ReasonUnknownOperator Reason = "unknown_operator" // not a filter operator
	ReasonEmptyField      Reason = "empty_field"      // condition without a field name
	ReasonEmptyGroup      Reason = "empty_group"      // and/or with no conditions
	ReasonEmptyList       Reason = "empty_list"       // in/contains_* with no values
	ReasonNull            Reason = "null_value"       // null used as a comparison value
	ReasonValue           Reason = "bad_value"        // value of the wrong shape for the operator
	ReasonUndeclared      Reason = "undeclared_field" // field not in the schema
	ReasonNotFilterable   Reason = "not_filterable"   // field declared but not filterable
	ReasonNeqOptional     Reason = "neq_optional"     // neq on a field that is not required
	ReasonListField       Reason = "list_field"       // scalar operator on a list field
	ReasonNotList         Reason = "not_list_field"   // contains_* on a non-string[] field
	ReasonNotNumeric      Reason = "not_numeric"      // range on a non-numeric field
	ReasonType            Reason = "type"             // value does not have the field's type
	ReasonRaw             Reason = "raw"              // raw fragment refused by this store
	ReasonRawRefused      Reason = "raw_refused"      // raw fragment in a request that may not carry one
	ReasonSyntax          Reason = "syntax"           // malformed filter text or JSON
)

// Error is a filter that cannot be used: malformed, or invalid against a
// schema, or refused by a store. Field and Op name the offending condition
// when there is one.
type Error struct {
	Field  string
	Op     Op
	Reason Reason
	Msg    string
}

func (e *Error) Error() string { return "filter: " + e.Msg }

func errorf(field string, op Op, r Reason, format string, args ...any) *Error {
	return &Error{Field: field, Op: op, Reason: r, Msg: fmt.Sprintf(format, args...)}
}

// Syntax names a filter syntax in error messages.
type Syntax string

// The three filter syntaxes.
const (
	SyntaxJSON  Syntax = "json"
	SyntaxShort Syntax = "short json"
	SyntaxText  Syntax = "text"
)

// SyntaxError is a filter that could not be parsed. Offset is the 0-based
// byte offset of the problem in the input and Column its 1-based column in
// characters (0 when the position is unknown). Err, when set, is the *Error
// a well-formed but invalid part of the input produced.
type SyntaxError struct {
	Syntax Syntax
	Offset int
	Column int
	Msg    string
	Err    error
}

func (e *SyntaxError) Error() string {
	var b strings.Builder
	b.WriteString("filter: ")
	b.WriteString(string(e.Syntax))
	if e.Column > 0 {
		fmt.Fprintf(&b, " at column %d", e.Column)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns the underlying *Error, if any.
func (e *SyntaxError) Unwrap() error { return e.Err }

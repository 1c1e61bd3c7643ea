package document

import (
	"errors"
	"fmt"
)

// Reason classifies a schema or validation error so callers can branch on it
// without parsing messages.
type Reason string

// Reasons reported by SchemaError and ValidationError.
const (
	ReasonBadName       Reason = "bad_name"       // field name is not portable
	ReasonReserved      Reason = "reserved"       // reserved key or field name
	ReasonBadType       Reason = "bad_type"       // unknown field type
	ReasonDuplicate     Reason = "duplicate"      // field declared twice
	ReasonUndeclared    Reason = "undeclared"     // field not in the schema
	ReasonNotFilterable Reason = "not_filterable" // field cannot be filtered
	ReasonRequired      Reason = "required"       // required value missing or null
	ReasonType          Reason = "type"           // value of the wrong type
	ReasonNotJSONSafe   Reason = "not_json_safe"  // value cannot round-trip through JSON
	ReasonEmptyKey      Reason = "empty_key"      // metadata key is empty
)

// SchemaError reports a problem with a schema or with a field's use against
// it (undeclared, not filterable).
type SchemaError struct {
	Field  string
	Reason Reason
	Msg    string
}

func (e *SchemaError) Error() string { return e.Msg }

// ValidationError reports a document that does not satisfy the document
// rules or its collection's schema. DocID is empty when the document has no
// id yet.
type ValidationError struct {
	DocID  string
	Field  string
	Reason Reason
	Msg    string
}

func (e *ValidationError) Error() string {
	if e.DocID == "" {
		return "document: " + e.Msg
	}
	return fmt.Sprintf("document %s: %s", e.DocID, e.Msg)
}

// Vector errors. They are returned wrapped with context; test with errors.Is.
var (
	ErrEmptyVector    = errors.New("embedding cannot be empty")
	ErrDimension      = errors.New("embedding has the wrong dimension")
	ErrNonFinite      = errors.New("embedding holds NaN or an infinity")
	ErrZeroNorm       = errors.New("embedding has zero norm")
	ErrNormOverflow   = errors.New("embedding norm overflows float32")
	ErrLengthMismatch = errors.New("vectors must have the same length")
)

package document

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
)

// FieldType is the declared type of a metadata field.
type FieldType string

// The field types of SEMANTICS §2. Among list types only StringList may be
// filterable.
const (
	TypeString      FieldType = "string"
	TypeInteger     FieldType = "integer"
	TypeFloat       FieldType = "float"
	TypeBoolean     FieldType = "boolean"
	TypeStringList  FieldType = "string[]"
	TypeIntegerList FieldType = "integer[]"
	TypeFloatList   FieldType = "float[]"
	TypeBooleanList FieldType = "boolean[]"
)

// Valid reports whether t is one of the declared field types.
func (t FieldType) Valid() bool {
	switch t {
	case TypeString, TypeInteger, TypeFloat, TypeBoolean,
		TypeStringList, TypeIntegerList, TypeFloatList, TypeBooleanList:
		return true
	}
	return false
}

// IsList reports whether t is a list type.
func (t FieldType) IsList() bool {
	switch t {
	case TypeStringList, TypeIntegerList, TypeFloatList, TypeBooleanList:
		return true
	}
	return false
}

// IsNumeric reports whether t is integer or float.
func (t FieldType) IsNumeric() bool { return t == TypeInteger || t == TypeFloat }

// Elem returns the element type of a list type, or t itself for a scalar.
func (t FieldType) Elem() FieldType {
	switch t {
	case TypeStringList:
		return TypeString
	case TypeIntegerList:
		return TypeInteger
	case TypeFloatList:
		return TypeFloat
	case TypeBooleanList:
		return TypeBoolean
	}
	return t
}

// Field declares one metadata field of a collection.
type Field struct {
	// Name matches ^[A-Za-z_][A-Za-z0-9_]*$ and is not reserved.
	Name string    `json:"name"`
	Type FieldType `json:"type"`
	// Required fields must be present and non-null on every document.
	Required bool `json:"required,omitempty"`
	// Filterable fields may appear in filters. Only scalar and string[]
	// fields may be filterable.
	Filterable bool `json:"filterable,omitempty"`
}

var fieldNameRE = regexp.MustCompile(`\A[A-Za-z_][A-Za-z0-9_]*\z`)

// CheckFieldName reports whether name is a portable field name: it must
// start with a letter or underscore and hold only letters, digits and
// underscores, so it is safe in every store's filter language.
func CheckFieldName(name string) error {
	if !fieldNameRE.MatchString(name) {
		return &SchemaError{Field: name, Reason: ReasonBadName,
			Msg: fmt.Sprintf("field name %q must start with a letter or underscore and contain letters, numbers, or underscores only", name)}
	}
	return nil
}

// Check validates the field declaration on its own.
func (f Field) Check() error {
	if err := CheckFieldName(f.Name); err != nil {
		return err
	}
	if IsReserved(f.Name) {
		return &SchemaError{Field: f.Name, Reason: ReasonReserved,
			Msg: fmt.Sprintf("field %q is reserved by Quarry and cannot be declared", f.Name)}
	}
	if !f.Type.Valid() {
		return &SchemaError{Field: f.Name, Reason: ReasonBadType,
			Msg: fmt.Sprintf("field %q has unknown type %q (use string, integer, float, boolean or a list of them such as string[])", f.Name, string(f.Type))}
	}
	if f.Filterable && f.Type.IsList() && f.Type != TypeStringList {
		return &SchemaError{Field: f.Name, Reason: ReasonNotFilterable,
			Msg: fmt.Sprintf("only string arrays support portable filters; field %q is %s: use a raw store filter or declare it not filterable", f.Name, f.Type)}
	}
	return nil
}

// Schema declares the metadata fields of a collection. The built-in fields
// sourceType and sourceName are always present, required and filterable
// strings; they are not listed in Fields. Undeclared metadata is stored and
// returned but cannot be filtered.
type Schema struct {
	Fields []Field `json:"fields"`
}

// builtins are the fields every schema has without declaring them.
var builtins = map[string]Field{
	"sourceType": {Name: "sourceType", Type: TypeString, Required: true, Filterable: true},
	"sourceName": {Name: "sourceName", Type: TypeString, Required: true, Filterable: true},
}

// NewSchema returns a schema of the given fields after checking it.
func NewSchema(fields ...Field) (*Schema, error) {
	s := &Schema{Fields: fields}
	if err := s.Check(); err != nil {
		return nil, err
	}
	return s, nil
}

// ParseSchema reads a schema from its JSON form
// ({"fields":[{"name","type","required","filterable"}…]}) and checks it.
// Unknown keys are rejected.
func ParseSchema(b []byte) (*Schema, error) {
	var s Schema
	if err := strictUnmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	if err := s.Check(); err != nil {
		return nil, err
	}
	return &s, nil
}

// Check validates every field declaration and rejects duplicates.
func (s *Schema) Check() error {
	seen := make(map[string]bool, len(s.Fields))
	for _, f := range s.Fields {
		if err := f.Check(); err != nil {
			return err
		}
		if seen[f.Name] {
			return &SchemaError{Field: f.Name, Reason: ReasonDuplicate,
				Msg: fmt.Sprintf("field %q is declared twice", f.Name)}
		}
		seen[f.Name] = true
	}
	return nil
}

// Lookup returns the declaration of name: a declared field, or one of the
// built-ins sourceType and sourceName. A nil schema knows only the built-ins.
func (s *Schema) Lookup(name string) (Field, bool) {
	if f, ok := builtins[name]; ok {
		return f, true
	}
	if s == nil {
		return Field{}, false
	}
	for _, f := range s.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// Filterable returns the declaration of name if it may be used in a filter,
// or an error saying why not (undeclared, or declared not filterable).
func (s *Schema) Filterable(name string) (Field, error) {
	f, ok := s.Lookup(name)
	if !ok {
		return Field{}, &SchemaError{Field: name, Reason: ReasonUndeclared,
			Msg: fmt.Sprintf("filter field %q is not declared in the collection schema; declare it with \"filterable\": true (sourceType and sourceName are built in; content and id cannot be filtered)", name)}
	}
	if !f.Filterable {
		return Field{}, &SchemaError{Field: name, Reason: ReasonNotFilterable,
			Msg: fmt.Sprintf("field %q is declared but not filterable; mark it \"filterable\": true", name)}
	}
	return f, nil
}

// ValueMatches reports whether v has type t: integer accepts only integers
// (2026, not 2026.0, "2026" or true); float any number; boolean only bools;
// list types a non-empty array whose every element has the element type.
func ValueMatches(t FieldType, v any) bool {
	switch t {
	case TypeString:
		_, ok := v.(string)
		if !ok {
			ok = TypeName(v) == "string"
		}
		return ok
	case TypeInteger:
		_, _, isInt, ok := Number(v)
		return ok && isInt && TypeName(v) == "integer"
	case TypeFloat:
		_, _, _, ok := Number(v)
		return ok && TypeName(v) != "bool"
	case TypeBoolean:
		return TypeName(v) == "bool"
	}
	if !t.IsList() {
		return false
	}
	elems, ok := listElems(v)
	if !ok || len(elems) == 0 {
		return false
	}
	for _, e := range elems {
		if !ValueMatches(t.Elem(), e) {
			return false
		}
	}
	return true
}

// listElems returns the elements of a JSON array value.
func listElems(v any) ([]any, bool) {
	switch x := v.(type) {
	case []any:
		return x, true
	case []string:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out, true
	case nil, string, map[string]any:
		return nil, false
	}
	c := canonical(v)
	l, ok := c.([]any)
	return l, ok
}

// ValidateDocument checks d on its own (see Document.Check) and then against
// the schema, field by field in declaration order: a required field missing
// or null, or a present value of the wrong type, is an error. Undeclared
// metadata is kept.
func (s *Schema) ValidateDocument(d *Document) error {
	if err := d.Check(); err != nil {
		return err
	}
	if s == nil {
		return nil
	}
	for _, f := range s.Fields {
		v, present := d.Metadata[f.Name]
		if !present || v == nil {
			if f.Required {
				return &ValidationError{DocID: d.ID, Field: f.Name, Reason: ReasonRequired,
					Msg: fmt.Sprintf("missing required metadata field %q", f.Name)}
			}
			continue
		}
		if !ValueMatches(f.Type, v) {
			given := TypeName(v)
			if f.Type.IsList() && given == "array" {
				given = "an empty or mixed array"
				if elems, _ := listElems(v); len(elems) > 0 {
					given = "an array with a non-" + string(f.Type.Elem()) + " element"
				}
			}
			return &ValidationError{DocID: d.ID, Field: f.Name, Reason: ReasonType,
				Msg: fmt.Sprintf("metadata field %q expects %s; %s given", f.Name, f.Type, given)}
		}
	}
	return nil
}

func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("unexpected data after the JSON value")
	}
	return nil
}

// LoadSchema reads a schema file (ParseSchema); errors name the file.
func LoadSchema(path string) (*Schema, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read schema: %w", err)
	}
	s, err := ParseSchema(b)
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", path, err)
	}
	return s, nil
}

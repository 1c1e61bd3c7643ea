package document

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// reservedKeys may not be used as metadata keys or schema field names: they
// name a document's own attributes in every wire format.
var reservedKeys = map[string]bool{
	"id": true, "content": true, "embedding": true, "score": true,
	"sourceType": true, "sourceName": true, "metadata": true,
}

// ReservedPrefix starts every metadata key Quarry keeps for itself.
const ReservedPrefix = "_quarry"

// IsReserved reports whether key is reserved (case-sensitive): a document
// attribute name, or any key starting with "_quarry".
func IsReserved(key string) bool {
	return reservedKeys[key] || strings.HasPrefix(key, ReservedPrefix)
}

// CheckValue reports whether v is JSON-safe: nil, a bool, a string of valid
// UTF-8, a finite number (any Go integer or float kind, or a json.Number), or
// a slice or string-keyed map of JSON-safe values. Structs, pointers,
// functions and channels are rejected so metadata always round-trips through
// every store unchanged.
func CheckValue(v any) error {
	return checkValue(v, 0)
}

const maxDepth = 64

func checkValue(v any, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("value nests deeper than %d levels", maxDepth)
	}
	switch x := v.(type) {
	case nil, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return nil
	case string:
		if !utf8.ValidString(x) {
			return fmt.Errorf("string %q is not valid UTF-8", x)
		}
		return nil
	case float64:
		return checkFloat(x)
	case float32:
		return checkFloat(float64(x))
	case json.Number:
		if _, err := strconv.ParseFloat(string(x), 64); err != nil {
			return fmt.Errorf("json.Number %q is not a finite number", string(x))
		}
		return nil
	case []any:
		for i, e := range x {
			if err := checkValue(e, depth+1); err != nil {
				return fmt.Errorf("element %d: %w", i, err)
			}
		}
		return nil
	case []string:
		for i, e := range x {
			if !utf8.ValidString(e) {
				return fmt.Errorf("element %d: string is not valid UTF-8", i)
			}
		}
		return nil
	case map[string]any:
		for _, k := range sortedKeys(x) {
			if !utf8.ValidString(k) {
				return fmt.Errorf("key %q is not valid UTF-8", k)
			}
			if err := checkValue(x[k], depth+1); err != nil {
				return fmt.Errorf("key %q: %w", k, err)
			}
		}
		return nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return nil
	case reflect.Float32, reflect.Float64:
		return checkFloat(rv.Float())
	case reflect.String:
		if !utf8.ValidString(rv.String()) {
			return fmt.Errorf("string is not valid UTF-8")
		}
		return nil
	case reflect.Slice, reflect.Array:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			// encoding/json writes []byte as base64, so it would not
			// round-trip as the array it looks like.
			return fmt.Errorf("must contain JSON-safe scalar, array, object or null values; %s given (convert bytes to a string)", rv.Type())
		}
		for i := 0; i < rv.Len(); i++ {
			if err := checkValue(rv.Index(i).Interface(), depth+1); err != nil {
				return fmt.Errorf("element %d: %w", i, err)
			}
		}
		return nil
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return fmt.Errorf("map keys must be strings; %s given", rv.Type())
		}
		iter := rv.MapRange()
		for iter.Next() {
			if err := checkValue(iter.Value().Interface(), depth+1); err != nil {
				return fmt.Errorf("key %q: %w", iter.Key().String(), err)
			}
		}
		return nil
	}
	return fmt.Errorf("must contain JSON-safe scalar, array, object or null values; %s given", TypeName(v))
}

func checkFloat(f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("number %v is not finite", f)
	}
	return nil
}

// TypeName names the JSON type of v as Quarry's messages use it: null, bool,
// integer, float, string, array, object; other Go values by their Go type.
func TypeName(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "bool"
	case string:
		return "string"
	case json.Number:
		if isIntegerLiteral(string(x)) {
			return "integer"
		}
		return "float"
	case []any, []string:
		return "array"
	case map[string]any:
		return "object"
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "float"
	case reflect.String:
		return "string"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Map:
		if rv.Type().Key().Kind() == reflect.String {
			return "object"
		}
	}
	return rv.Type().String()
}

// isIntegerLiteral reports whether a JSON number literal was written as an
// integer: no fraction and no exponent.
func isIntegerLiteral(s string) bool {
	return !strings.ContainsAny(s, ".eE")
}

// Number reports v as a number. isInt is true when v is an integer (a Go
// integer kind, or a json.Number written without fraction or exponent) that
// fits an int64; then i holds it exactly. f always holds the float64 value.
func Number(v any) (f float64, i int64, isInt, ok bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), x, true, true
	case float64:
		return x, 0, false, true
	case int:
		return float64(x), int64(x), true, true
	case json.Number:
		s := string(x)
		if isIntegerLiteral(s) {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				return float64(n), n, true, true
			}
		}
		g, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, 0, false, false
		}
		return g, 0, false, true
	case int32:
		return float64(x), int64(x), true, true
	case float32:
		return float64(x), 0, false, true
	case string, bool, nil:
		return 0, 0, false, false
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n := rv.Int()
		return float64(n), n, true, true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		u := rv.Uint()
		if u <= math.MaxInt64 {
			return float64(u), int64(u), true, true
		}
		return float64(u), 0, false, true
	case reflect.Float32, reflect.Float64:
		return rv.Float(), 0, false, true
	}
	return 0, 0, false, false
}

// DecodeJSONValue decodes one JSON value into Quarry's canonical Go values:
// nil, bool, string, int64 (numbers written as integers that fit), float64
// (every other number), []any and map[string]any. Trailing data is an error.
func DecodeJSONValue(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("unexpected data after the JSON value")
	}
	return Canonical(v)
}

// Canonical converts a JSON-safe value into canonical Go values (see
// DecodeJSONValue). Named types with an underlying string, bool or number
// become their underlying value; typed slices and maps become []any and
// map[string]any. A value that is not JSON-safe is an error.
func Canonical(v any) (any, error) {
	if err := CheckValue(v); err != nil {
		return nil, err
	}
	return canonical(v), nil
}

func canonical(v any) any {
	switch x := v.(type) {
	case nil, bool, string, int64, float64:
		return v
	case json.Number:
		f, i, isInt, _ := Number(x)
		if isInt {
			return i
		}
		return f
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = canonical(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = canonical(e)
		}
		return out
	}
	if f, i, isInt, ok := Number(v); ok {
		if isInt {
			return i
		}
		return f
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Bool:
		return rv.Bool()
	case reflect.String:
		return rv.String()
	case reflect.Slice, reflect.Array:
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = canonical(rv.Index(i).Interface())
		}
		return out
	case reflect.Map:
		out := make(map[string]any, rv.Len())
		iter := rv.MapRange()
		for iter.Next() {
			out[iter.Key().String()] = canonical(iter.Value().Interface())
		}
		return out
	}
	return v
}

// MarshalValue writes a JSON-safe value as JSON with object keys sorted and
// floats kept recognisable as floats (9.0, not 9), so a value's integer-ness
// survives a round trip through Quarry's stores and wire formats.
func MarshalValue(v any) ([]byte, error) {
	c, err := Canonical(v)
	if err != nil {
		return nil, err
	}
	return appendValue(nil, c), nil
}

func appendValue(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, x)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case float64:
		return append(b, FormatFloat(x)...)
	case string:
		return appendString(b, x)
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendValue(b, e)
		}
		return append(b, ']')
	case map[string]any:
		b = append(b, '{')
		for i, k := range sortedKeys(x) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = appendValue(b, x[k])
		}
		return append(b, '}')
	}
	return append(b, "null"...) // unreachable for canonical values
}

// appendString writes s as a JSON string without HTML escaping.
func appendString(b []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // strings always encode
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}

// FormatFloat prints f like encoding/json does but always as a float:
// 2025.0 prints as "2025.0", not "2025", so it reads back as a float.
func FormatFloat(f float64) string {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	s := strconv.FormatFloat(f, format, -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Package jsonorder decodes JSON keeping object keys in document order and
// number literals exact, for the places where order or the literal matters
// (short filters AND their keys in order; rendered JSON objects read as
// written; raw filter fragments pass through unchanged).
package jsonorder

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Object is a JSON object with its keys in document order.
type Object struct {
	Keys []string
	Vals []any
}

// Get returns the value of key k.
func (o *Object) Get(k string) (any, bool) {
	for i, key := range o.Keys {
		if key == k {
			return o.Vals[i], true
		}
	}
	return nil, false
}

// MaxDepth bounds nesting so hostile input cannot exhaust the stack.
const MaxDepth = 100

// Decoder exposes the position of a syntax error.
type Decoder struct {
	dec *json.Decoder
}

// Decode decodes one JSON value: objects as *Object, arrays as []any,
// numbers as json.Number, strings, bools and nil. Duplicate keys and
// trailing data are errors. On error, Offset tells where decoding stopped.
func Decode(s string) (any, *Decoder, error) {
	d := &Decoder{dec: json.NewDecoder(strings.NewReader(s))}
	d.dec.UseNumber()
	v, err := d.value(0)
	if err != nil {
		return nil, d, err
	}
	if _, err := d.dec.Token(); !errors.Is(err, io.EOF) {
		return nil, d, ErrTrailing
	}
	return v, d, nil
}

// ErrTrailing reports data after the JSON value.
var ErrTrailing = errors.New("unexpected data after the JSON value")

// Offset is the input offset reached by the decoder.
func (d *Decoder) Offset() int64 { return d.dec.InputOffset() }

func (d *Decoder) value(depth int) (any, error) {
	if depth > MaxDepth {
		return nil, fmt.Errorf("JSON nests deeper than %d levels", MaxDepth)
	}
	tok, err := d.dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &Object{}
			for d.dec.More() {
				kt, err := d.dec.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("object key is not a string")
				}
				if _, dup := o.Get(k); dup {
					return nil, fmt.Errorf("duplicate key %q", k)
				}
				v, err := d.value(depth + 1)
				if err != nil {
					return nil, err
				}
				o.Keys = append(o.Keys, k)
				o.Vals = append(o.Vals, v)
			}
			if _, err := d.dec.Token(); err != nil {
				return nil, err
			}
			return o, nil
		case '[':
			list := []any{}
			for d.dec.More() {
				v, err := d.value(depth + 1)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			if _, err := d.dec.Token(); err != nil {
				return nil, err
			}
			return list, nil
		}
		return nil, fmt.Errorf("unexpected %q", t)
	}
	return tok, nil // json.Number, string, bool, nil
}

// Compact writes a decoded value back as compact JSON, keys in order and
// number literals as written. Values of other types are written with
// writeOther (nil writes null for them).
func Compact(v any, writeOther func(*bytes.Buffer, any)) []byte {
	var b bytes.Buffer
	write(&b, v, writeOther)
	return b.Bytes()
}

func write(b *bytes.Buffer, v any, other func(*bytes.Buffer, any)) {
	switch x := v.(type) {
	case *Object:
		b.WriteByte('{')
		for i, k := range x.Keys {
			if i > 0 {
				b.WriteByte(',')
			}
			WriteString(b, k)
			b.WriteByte(':')
			write(b, x.Vals[i], other)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			write(b, e, other)
		}
		b.WriteByte(']')
	case nil:
		b.WriteString("null")
	case json.Number:
		b.WriteString(string(x))
	case string:
		WriteString(b, x)
	case bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	default:
		if other != nil {
			other(b, x)
		} else {
			b.WriteString("null")
		}
	}
}

// WriteString writes s as a JSON string without HTML escaping.
func WriteString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	b.Truncate(b.Len() - 1)
}

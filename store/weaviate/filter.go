package weaviate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
)

// Dialect is the tag raw filter fragments for this store carry. A
// fragment is one Weaviate where filter as JSON, in the REST shape
// ({"path": ["m_year"], "operator": "GreaterThan", "valueInt": 2020}),
// over the property names this package gives metadata fields ("m_" and the
// field name).
const Dialect = "weaviate"

// where is a Weaviate filter in its REST JSON shape. The same tree is sent
// as JSON (batch deletes) and written as a GraphQL input value (searches),
// so one compiler serves both.
type where = map[string]any

// truth is a filter that folded to a constant.
type truth int

const (
	unknown truth = iota // depends on the document
	always
	never
)

// compiled is a compiled filter: a constant, or a where tree when unknown.
type compiled struct {
	t truth
	w where
}

func constant(t truth) compiled { return compiled{t: t} }

// wrap protects a text value from Weaviate's "field" tokenization, which
// trims surrounding whitespace: " a " and "a" would be one token. Stored
// and compared values are both wrapped, so equality stays exact.
func wrap(s string) string { return "\x1e" + s + "\x1e" }

// unwrap undoes wrap.
func unwrap(s string) string {
	return strings.TrimSuffix(strings.TrimPrefix(s, "\x1e"), "\x1e")
}

func wrapAll(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = wrap(s)
	}
	return out
}

// fieldProp is the property holding a filterable metadata field.
func fieldProp(name string) string { return "m_" + name }

// compileFilter turns a validated filter into a where tree, following
// filter.Matcher's semantics exactly: a missing field matches nothing (neq
// included), numbers compare numerically across integer and float, other
// values need the field's own type, ranges need a number, contains_* a
// list of strings. schema is the collection's; Collection.checkFilter has
// already refused fields it does not declare filterable.
func compileFilter(e filter.Expr, schema *document.Schema) (compiled, error) {
	switch x := e.(type) {
	case nil:
		return constant(always), nil
	case *filter.Group:
		var parts []any
		for _, child := range x.Conditions {
			c, err := compileFilter(child, schema)
			if err != nil {
				return compiled{}, err
			}
			switch {
			case x.Op == filter.OpAnd && c.t == never, x.Op == filter.OpOr && c.t == always:
				return c, nil
			case c.t == unknown:
				parts = append(parts, c.w)
			}
		}
		switch len(parts) {
		case 0:
			if x.Op == filter.OpAnd {
				return constant(always), nil
			}
			return constant(never), nil
		case 1:
			return compiled{w: parts[0].(where)}, nil
		}
		op := "And"
		if x.Op == filter.OpOr {
			op = "Or"
		}
		return compiled{w: where{"operator": op, "operands": parts}}, nil
	case *filter.Raw:
		if x.Store != Dialect {
			return compiled{}, fmt.Errorf("raw filter targets %s; this store is %s", x.Store, Dialect)
		}
		var w where
		dec := json.NewDecoder(bytes.NewReader(x.Fragment))
		dec.UseNumber() // keep 2020 an integer: GraphQL's Int refuses 2020.0
		if err := dec.Decode(&w); err != nil {
			return compiled{}, fmt.Errorf("a weaviate raw fragment must be a JSON where filter: %w", err)
		}
		if _, err := gqlValue(w); err != nil {
			return compiled{}, fmt.Errorf("weaviate raw fragment: %w", err)
		}
		return compiled{w: w}, nil
	case *filter.Condition:
		return compileCondition(x, schema)
	}
	return compiled{}, fmt.Errorf("unsupported filter expression %T", e)
}

func compileCondition(c *filter.Condition, schema *document.Schema) (compiled, error) {
	var (
		prop string
		typ  document.FieldType
	)
	switch c.Field {
	case "sourceType":
		prop, typ = "q_stype", document.TypeString
	case "sourceName":
		prop, typ = "q_sname", document.TypeString
	default:
		f, err := schema.Filterable(c.Field)
		if err != nil {
			return compiled{}, err
		}
		prop, typ = fieldProp(c.Field), f.Type
	}
	path := []any{prop}
	present := where{"path": path, "operator": "IsNull", "valueBoolean": false}
	cmp := func(op string, v any) where {
		w := where{"path": path, "operator": op}
		w[valueKey(typ.Elem(), v)] = v
		return w
	}
	switch c.Op {
	case filter.OpEq, filter.OpNeq, filter.OpIn:
		if typ.IsList() {
			// A list never equals a scalar, so eq and in match nothing and
			// neq matches every document that has the field.
			if c.Op == filter.OpNeq {
				return compiled{w: present}, nil
			}
			return constant(never), nil
		}
		var wants []any
		if c.Op == filter.OpIn {
			wants = c.Value.([]any)
		} else {
			wants = []any{c.Value}
		}
		var eqs []any
		for _, w := range wants {
			if v, ok := scalarValue(typ, w); ok {
				eqs = append(eqs, cmp("Equal", v))
			}
		}
		if c.Op == filter.OpNeq {
			if len(eqs) == 0 {
				return compiled{w: present}, nil // a value of another type is never equal
			}
			return compiled{w: where{"operator": "And", "operands": []any{present, where{"operator": "Not", "operands": eqs}}}}, nil
		}
		switch len(eqs) {
		case 0:
			return constant(never), nil
		case 1:
			return compiled{w: eqs[0].(where)}, nil
		}
		return compiled{w: where{"operator": "Or", "operands": eqs}}, nil
	case filter.OpGt, filter.OpGte, filter.OpLt, filter.OpLte:
		if typ != document.TypeInteger && typ != document.TypeFloat {
			return constant(never), nil
		}
		v, fold := filter.NumericBound(c.Op, typ, c.Value)
		switch fold {
		case filter.Always:
			return compiled{w: present}, nil
		case filter.Never:
			return constant(never), nil
		}
		return compiled{w: cmp(rangeOp(c.Op), v)}, nil
	case filter.OpContainsAny, filter.OpContainsAll:
		if typ != document.TypeStringList {
			return constant(never), nil // only lists of strings hold strings
		}
		var ss []string
		for _, v := range c.Value.([]any) {
			if s, ok := v.(string); ok {
				ss = append(ss, s)
			}
		}
		if len(ss) == 0 {
			return constant(never), nil
		}
		op := "ContainsAny"
		if c.Op == filter.OpContainsAll {
			op = "ContainsAll"
		}
		return compiled{w: where{"path": path, "operator": op, "valueTextArray": wrapAll(ss)}}, nil
	}
	return compiled{}, fmt.Errorf("unsupported operator %s", c.Op)
}

// valueKey names the where member that carries a value of this type.
func valueKey(elem document.FieldType, v any) string {
	switch v.(type) {
	case []any:
		switch elem {
		case document.TypeInteger:
			return "valueIntArray"
		case document.TypeFloat:
			return "valueNumberArray"
		case document.TypeBoolean:
			return "valueBooleanArray"
		}
		return "valueTextArray"
	}
	switch elem {
	case document.TypeInteger:
		return "valueInt"
	case document.TypeFloat:
		return "valueNumber"
	case document.TypeBoolean:
		return "valueBoolean"
	}
	return "valueText"
}

// scalarValue converts a filter value into the stored form of a scalar
// field of type typ (strings wrapped); false when no stored value can
// equal it.
func scalarValue(typ document.FieldType, v any) (any, bool) {
	x, ok := filter.StoredValue(typ, v)
	if s, isString := x.(string); isString {
		return wrap(s), ok
	}
	return x, ok
}

// rangeOp is the Weaviate operator of a range condition.
func rangeOp(op filter.Op) string {
	switch op {
	case filter.OpGt:
		return "GreaterThan"
	case filter.OpGte:
		return "GreaterThanEqual"
	case filter.OpLt:
		return "LessThan"
	}
	return "LessThanEqual"
}

// and combines where trees (nil members are skipped).
func and(ws ...where) where {
	var parts []any
	for _, w := range ws {
		if w != nil {
			parts = append(parts, w)
		}
	}
	switch len(parts) {
	case 0:
		return nil
	case 1:
		return parts[0].(where)
	}
	return where{"operator": "And", "operands": parts}
}

var identRE = regexp.MustCompile(`\A[A-Za-z_][A-Za-z0-9_]*\z`)

// gqlValue writes a JSON-shaped value as a GraphQL input value. Strings go
// through JSON encoding, whose escapes are GraphQL's, so no value can end
// its literal early; object keys must be names, and an "operator" member
// is written as the enum it is.
func gqlValue(v any) (string, error) {
	var b strings.Builder
	if err := writeGQL(&b, "", v); err != nil {
		return "", err
	}
	return b.String(), nil
}

func writeGQL(b *strings.Builder, key string, v any) error {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case int:
		b.WriteString(strconv.Itoa(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("number %v has no GraphQL form", x)
		}
		s := strconv.FormatFloat(x, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eE") {
			s += ".0"
		}
		b.WriteString(s)
	case string:
		if key == "operator" || key == "order" {
			if !identRE.MatchString(x) {
				return fmt.Errorf("%s %q is not a name", key, x)
			}
			b.WriteString(x)
			return nil
		}
		j, err := json.Marshal(x)
		if err != nil {
			return err
		}
		b.Write(j)
	case []string:
		return writeGQL(b, key, anySlice(x))
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeGQL(b, key, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			if !identRE.MatchString(k) {
				return fmt.Errorf("member %q is not a name", k)
			}
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			// REST names list values valueTextArray, valueIntArray, …;
			// GraphQL takes a list in valueText, valueInt, ….
			name := k
			if strings.HasPrefix(k, "value") && strings.HasSuffix(k, "Array") {
				name = strings.TrimSuffix(k, "Array")
			}
			b.WriteString(name)
			b.WriteByte(':')
			if err := writeGQL(b, k, x[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case json.Number:
		if _, err := strconv.ParseFloat(string(x), 64); err != nil {
			return fmt.Errorf("bad number %q", x)
		}
		b.WriteString(string(x))
	default:
		return fmt.Errorf("value of type %T has no GraphQL form", v)
	}
	return nil
}

func anySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

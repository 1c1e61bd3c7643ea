package filter_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/internal/conformance"
)

func TestConformance(t *testing.T) {
	cases := conformance.Load(t, "neuron.filter_model", "neuron.filter_validation", "neuron.filter_evaluator")
	diffs := conformance.LoadDifferences(t, filepath.Join("testdata", "conformance_differences.json"))
	conformance.Run(t, cases, diffs, func(c conformance.Case) []conformance.Result {
		switch c.Area {
		case "neuron.filter_model":
			return modelCase(c)
		case "neuron.filter_validation":
			return validationCase(c)
		case "neuron.filter_evaluator":
			return evaluatorCase(c)
		}
		return conformance.Fail("unknown area %s", c.Area)
	})
}

func mustCanonical(raw json.RawMessage) (filter.Expr, error) {
	if string(raw) == "null" {
		return nil, nil
	}
	return filter.ParseJSON(string(raw))
}

// sameJSON compares the canonical form of e with the expected canonical JSON.
func sameJSON(e filter.Expr, want json.RawMessage) error {
	got, err := filter.Format(e)
	if err != nil {
		return err
	}
	w, err := filter.ParseJSON(string(want))
	if err != nil {
		return fmt.Errorf("expected JSON: %w", err)
	}
	ws, _ := filter.Format(w)
	if got != ws {
		return fmt.Errorf("got %s, want %s", got, ws)
	}
	return nil
}

// status stands for a PHP backed enum: a Go named string type.
type status string

func modelCase(c conformance.Case) []conformance.Result {
	var in struct {
		Fluent     [][]json.RawMessage `json:"fluent"`
		From       json.RawMessage     `json:"from"`
		Then       [][]json.RawMessage `json:"then"`
		Call       string              `json:"call"`
		Field      json.RawMessage     `json:"field"`
		Value      json.RawMessage     `json:"value"`
		Values     []json.RawMessage   `json:"values"`
		Conditions []json.RawMessage   `json:"conditions"`
		Expr       string              `json:"expr"`
		Merge      []json.RawMessage   `json:"merge"`
		Store      string              `json:"store"`
		Fragment   string              `json:"fragment"`
	}
	var exp struct {
		ToArray         json.RawMessage            `json:"toArray"`
		Error           *conformance.ExpectedError `json:"error"`
		SameObject      bool                       `json:"expression_is_same_object"`
		Value           json.RawMessage            `json:"value"`
		Field           string                     `json:"field"`
		Operator        string                     `json:"operator"`
		ConditionsCount int                        `json:"conditions_count"`
		Third           json.RawMessage            `json:"third_condition"`
	}
	if err := c.Decode(&in, &exp); err != nil {
		return conformance.Of(err)
	}
	var e filter.Expr
	var err error
	switch {
	case in.Fluent != nil || in.From != nil:
		var parts []filter.Expr
		if in.From != nil {
			f, err := mustCanonical(in.From)
			if err != nil {
				return conformance.Of(err)
			}
			parts = append(parts, f)
		}
		for _, call := range append(in.Fluent, in.Then...) {
			x, err := fluent(call)
			if err != nil {
				return conformance.Of(err)
			}
			parts = append(parts, x)
		}
		e = filter.And(parts...)
		err = filter.Check(e)
	case in.Expr != "":
		e, err = parseMini(in.Expr)
		if err == nil {
			err = filter.Check(e)
		}
	case in.Merge != nil:
		var scopes []filter.Expr
		for _, m := range in.Merge {
			s, err := mustCanonical(m)
			if err != nil {
				return conformance.Of(err)
			}
			scopes = append(scopes, s)
		}
		e = filter.Merge(scopes...)
		if exp.SameObject {
			var only filter.Expr
			for _, s := range scopes {
				if s != nil {
					only = s
				}
			}
			if e != only {
				return conformance.Fail("Merge wrapped its single scope")
			}
		}
	case in.Call == "raw":
		e = filter.NewRaw(in.Store, in.Fragment)
	case in.Call == "FilterGroup.or":
		e = filter.Or()
		err = filter.Check(e)
	case in.Call != "":
		var field any
		if err := json.Unmarshal(in.Field, &field); err != nil {
			return conformance.Of(err)
		}
		if decl, ok := field.(map[string]any); ok {
			// A schema field given at construction: Quarry checks fields
			// against the schema in Validate, before any I/O.
			s, serr := document.ParseSchema([]byte(fmt.Sprintf(`{"fields":[%s]}`, in.Field)))
			if serr != nil {
				return conformance.Of(serr)
			}
			v, _ := document.DecodeJSONValue(in.Value)
			e = filter.NewCondition(filter.Op(in.Call), decl["name"].(string), v)
			err = filter.Validate(e, s)
			break
		}
		var values []any
		for _, raw := range in.Values {
			values = append(values, placeholder(raw))
		}
		switch in.Call {
		case "in":
			e = filter.In(field.(string), values...)
		case "containsAny":
			var ss []string
			for _, v := range values {
				ss = append(ss, v.(string))
			}
			e = filter.ContainsAny(field.(string), ss...)
		default:
			v, _ := document.DecodeJSONValue(in.Value)
			e = filter.NewCondition(filter.Op(in.Call), field.(string), v)
		}
		err = filter.Check(e)
	default:
		return conformance.Fail("unrecognised input")
	}
	if exp.Error != nil {
		if err == nil {
			return conformance.Fail("want an error like %q, got none", exp.Error.Message)
		}
		return conformance.Of(conformance.NamesQuoted(exp.Error.Message, err.Error()))
	}
	if err != nil {
		return conformance.Of(err)
	}
	switch {
	case exp.ToArray != nil:
		return conformance.Of(sameJSON(e, exp.ToArray))
	case exp.Value != nil:
		c := e.(*filter.Condition)
		got, _ := json.Marshal(c.Value)
		if exp.Field != "" {
			if c.Field != exp.Field || string(c.Op) != exp.Operator {
				return conformance.Fail("got %+v", c)
			}
		}
		var want bytes.Buffer
		_ = json.Compact(&want, exp.Value)
		if string(got) != want.String() {
			return conformance.Fail("value %s, want %s", got, exp.Value)
		}
	case exp.ConditionsCount > 0:
		g, ok := e.(*filter.Group)
		if !ok || string(g.Op) != exp.Operator || len(g.Conditions) != exp.ConditionsCount {
			return conformance.Fail("got %#v", e)
		}
		return conformance.Of(sameJSON(g.Conditions[2], exp.Third))
	}
	return conformance.Pass()
}

// placeholder maps the cases' PHP values ({"enum"}, {"datetime"}) to Go.
func placeholder(raw json.RawMessage) any {
	var obj map[string]string
	if json.Unmarshal(raw, &obj) == nil {
		if v, ok := obj["enum"]; ok {
			return status(v)
		}
		if v, ok := obj["datetime"]; ok {
			sec, _ := strconv.ParseInt(strings.TrimPrefix(v, "@"), 10, 64)
			return time.Unix(sec, 0)
		}
	}
	v, _ := document.DecodeJSONValue(raw)
	return v
}

// fluent maps one builder call of the cases to Quarry's constructors.
func fluent(call []json.RawMessage) (filter.Expr, error) {
	var name, field string
	_ = json.Unmarshal(call[0], &name)
	if name == "whereAny" {
		var list []json.RawMessage
		_ = json.Unmarshal(call[1], &list)
		var children []filter.Expr
		for _, l := range list {
			x, err := filter.ParseJSON(string(l))
			if err != nil {
				return nil, err
			}
			children = append(children, x)
		}
		return filter.Or(children...), nil
	}
	_ = json.Unmarshal(call[1], &field)
	v, err := document.DecodeJSONValue(call[2])
	if err != nil {
		return nil, err
	}
	ops := map[string]filter.Op{
		"where": filter.OpEq, "whereNot": filter.OpNeq, "whereIn": filter.OpIn,
		"whereGreaterThan": filter.OpGt, "whereGreaterThanOrEqual": filter.OpGte,
		"whereLessThan": filter.OpLt, "whereLessThanOrEqual": filter.OpLte,
	}
	op, ok := ops[name]
	if !ok {
		return nil, fmt.Errorf("unknown builder %s", name)
	}
	return filter.NewCondition(op, field, v), nil
}

// parseMini reads the cases' constructor notation: and(...), or(...),
// anyOf(...), allOf(...), eq(field,value), gte(field,value).
func parseMini(s string) (filter.Expr, error) {
	s = strings.ReplaceAll(s, " ", "")
	e, rest, err := miniExpr(s)
	if err != nil {
		return nil, err
	}
	if rest != "" {
		return nil, fmt.Errorf("trailing %q", rest)
	}
	return e, nil
}

func miniExpr(s string) (filter.Expr, string, error) {
	open := strings.IndexByte(s, '(')
	if open < 0 {
		return nil, "", fmt.Errorf("expected a call in %q", s)
	}
	name, s := s[:open], s[open+1:]
	switch name {
	case "and", "or", "anyOf", "allOf":
		var children []filter.Expr
		for {
			c, rest, err := miniExpr(s)
			if err != nil {
				return nil, "", err
			}
			children = append(children, c)
			s = rest
			if strings.HasPrefix(s, ",") {
				s = s[1:]
				continue
			}
			if !strings.HasPrefix(s, ")") {
				return nil, "", fmt.Errorf("expected ) in %q", s)
			}
			s = s[1:]
			break
		}
		if name == "and" || name == "allOf" {
			return filter.And(children...), s, nil
		}
		return filter.Or(children...), s, nil
	}
	end := strings.IndexByte(s, ')')
	field, val, _ := strings.Cut(s[:end], ",")
	var v any = val
	if n, err := strconv.ParseInt(val, 10, 64); err == nil {
		v = n
	}
	return filter.NewCondition(filter.Op(name), field, v), s[end+1:], nil
}

func validationCase(c conformance.Case) []conformance.Result {
	var in struct {
		Schema json.RawMessage `json:"schema"`
		Filter json.RawMessage `json:"filter"`
	}
	var exp struct {
		Valid *bool                      `json:"valid"`
		Error *conformance.ExpectedError `json:"error"`
	}
	if err := c.Decode(&in, &exp); err != nil {
		return conformance.Of(err)
	}
	s, err := document.ParseSchema(in.Schema)
	if err != nil {
		return conformance.Of(err)
	}
	e, err := filter.ParseJSON(string(in.Filter))
	if err == nil {
		err = filter.Validate(e, s)
	}
	if exp.Error != nil {
		if err == nil {
			return conformance.Fail("want an error like %q, got none", exp.Error.Message)
		}
		if exp.Error.Match == "prefix" {
			if !strings.HasPrefix(strings.ToLower(strings.TrimPrefix(err.Error(), "filter: json: ")), strings.ToLower(exp.Error.Message)) {
				return conformance.Fail("message %q does not start with %q", err, exp.Error.Message)
			}
		}
		return conformance.Of(conformance.NamesQuoted(exp.Error.Message, err.Error()))
	}
	return conformance.Of(err)
}

func evaluatorCase(c conformance.Case) []conformance.Result {
	var in struct {
		Fields  json.RawMessage   `json:"fields"`
		Filter  json.RawMessage   `json:"filter"`
		Filters []json.RawMessage `json:"filters"`
	}
	var exp struct {
		Matches json.RawMessage            `json:"matches"`
		Error   *conformance.ExpectedError `json:"error"`
	}
	if err := c.Decode(&in, &exp); err != nil {
		return conformance.Of(err)
	}
	var fields map[string]any
	if in.Fields != nil {
		v, err := document.DecodeJSONValue(in.Fields)
		if err != nil {
			return conformance.Of(err)
		}
		fields = v.(map[string]any)
	}
	filters := in.Filters
	if in.Filter != nil {
		filters = []json.RawMessage{in.Filter}
	}
	var got []bool
	for _, raw := range filters {
		e, err := filter.ParseJSON(string(raw))
		if err != nil {
			return conformance.Of(err)
		}
		m, err := filter.NewMatcher(e)
		if exp.Error != nil {
			if err == nil {
				return conformance.Fail("raw filter accepted for evaluation")
			}
			r := e.(*filter.Group).Conditions[1].(*filter.Group).Conditions[1].(*filter.Raw)
			if !strings.Contains(err.Error(), r.Store) {
				return conformance.Fail("message %q does not name store %s", err, r.Store)
			}
			return conformance.Pass()
		}
		if err != nil {
			return conformance.Of(err)
		}
		got = append(got, m.MatchMap(fields))
	}
	var want []bool
	var one bool
	if json.Unmarshal(exp.Matches, &one) == nil {
		want = []bool{one}
	} else if err := json.Unmarshal(exp.Matches, &want); err != nil {
		return conformance.Of(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		return conformance.Fail("matches %v, want %v", got, want)
	}
	return conformance.Pass()
}

package filter_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
)

const canonicalTour = `{"operator":"and","conditions":[{"operator":"eq","field":"tenant","value":"acme"},{"operator":"or","conditions":[{"operator":"gte","field":"year","value":2025},{"operator":"contains_any","field":"tags","value":["go","rag"]}]}]}`

func TestThreeSyntaxesOneTree(t *testing.T) {
	inputs := []string{
		`tenant = 'acme' and (year >= 2025 or tags contains any ('go','rag'))`,
		`TENANT = 'acme' AND (year >= 2025 OR tags CONTAINS ANY ('go', 'rag'))`,
		`{"tenant":"acme","$or":[{"year":{"$gte":2025}},{"tags":{"$containsAny":["go","rag"]}}]}`,
		canonicalTour,
		`{"conditions":[{"field":"tenant","value":"acme","operator":"eq"},{"operator":"or","conditions":[{"operator":"gte","field":"year","value":2025},{"operator":"contains_any","field":"tags","value":["go","rag"]}]}],"operator":"and"}`,
	}
	want := filter.And(filter.Eq("tenant", "acme"), filter.Or(filter.Gte("year", 2025), filter.ContainsAny("tags", "go", "rag")))
	for _, in := range inputs {
		e, err := filter.Parse(in)
		if err != nil {
			t.Fatalf("Parse(%s): %v", in, err)
		}
		if strings.HasPrefix(in, "TENANT") {
			// Keywords are case-insensitive; field names are not.
			if e.(*filter.Group).Conditions[0].(*filter.Condition).Field != "TENANT" {
				t.Errorf("field name case changed")
			}
			continue
		}
		if !reflect.DeepEqual(e, want) {
			t.Errorf("Parse(%s) = %#v, want %#v", in, e, want)
		}
		got, err := filter.Format(e)
		if err != nil {
			t.Fatal(err)
		}
		if got != canonicalTour {
			t.Errorf("Format(Parse(%s)) =\n%s\nwant\n%s", in, got, canonicalTour)
		}
	}
}

func TestCanonicalPrinting(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{`year = 2025`, `{"operator":"eq","field":"year","value":2025}`},
		{`year = 2025.0`, `{"operator":"eq","field":"year","value":2025.0}`},
		{`{"year":2025.0}`, `{"operator":"eq","field":"year","value":2025.0}`},
		{`{"year":2025}`, `{"operator":"eq","field":"year","value":2025}`},
		{`price < 9.5`, `{"operator":"lt","field":"price","value":9.5}`},
		{`price > -1e3`, `{"operator":"gt","field":"price","value":-1000.0}`},
		{`big = 1e21`, `{"operator":"eq","field":"big","value":1e+21}`},
		{`{"operator":"and","conditions":[{"operator":"eq","field":"a","value":1}]}`, `{"operator":"eq","field":"a","value":1}`},
		{`{"operator":"or","conditions":[{"operator":"or","conditions":[{"operator":"eq","field":"a","value":1},{"operator":"eq","field":"b","value":2}]},{"operator":"eq","field":"c","value":3}]}`,
			`{"operator":"or","conditions":[{"operator":"eq","field":"a","value":1},{"operator":"eq","field":"b","value":2},{"operator":"eq","field":"c","value":3}]}`},
		{`name = 'O''Brien <b>&'`, `{"operator":"eq","field":"name","value":"O'Brien <b>&"}`},
		{`b = true and c = FALSE`, `{"operator":"and","conditions":[{"operator":"eq","field":"b","value":true},{"operator":"eq","field":"c","value":false}]}`},
		{`a = 1 or b = 2 and c = 3`, `{"operator":"or","conditions":[{"operator":"eq","field":"a","value":1},{"operator":"and","conditions":[{"operator":"eq","field":"b","value":2},{"operator":"eq","field":"c","value":3}]}]}`},
		{`(a = 1 or b = 2) and c = 3`, `{"operator":"and","conditions":[{"operator":"or","conditions":[{"operator":"eq","field":"a","value":1},{"operator":"eq","field":"b","value":2}]},{"operator":"eq","field":"c","value":3}]}`},
		{`{"year":{"$gte":2020,"$lt":2026}}`, `{"operator":"and","conditions":[{"operator":"gte","field":"year","value":2020},{"operator":"lt","field":"year","value":2026}]}`},
		{`{"z":1,"a":2}`, `{"operator":"and","conditions":[{"operator":"eq","field":"z","value":1},{"operator":"eq","field":"a","value":2}]}`},
		{`{"lang":{"$ne":"de"},"s":{"$in":["a","b"]}}`, `{"operator":"and","conditions":[{"operator":"neq","field":"lang","value":"de"},{"operator":"in","field":"s","value":["a","b"]}]}`},
		{`{"$and":[{"a":1},{"$or":[{"b":2},{"c":3}]}]}`, `{"operator":"and","conditions":[{"operator":"eq","field":"a","value":1},{"operator":"or","conditions":[{"operator":"eq","field":"b","value":2},{"operator":"eq","field":"c","value":3}]}]}`},
		{`{"$raw":{"store":"qdrant","fragment":{"must":[{"key":"a","match":{"value":1.50}}]}}}`, `{"operator":"raw","store":"qdrant","fragment":{"must":[{"key":"a","match":{"value":1.50}}]}}`},
		{`{"operator":"raw","store":"postgres","fragment":"metadata->>'a' = 'b'"}`, `{"operator":"raw","store":"postgres","fragment":"metadata->>'a' = 'b'"}`},
		{`d >= '2025-01-01T00:00:00Z'`, `{"operator":"gte","field":"d","value":1735689600}`},
		{`d < '2025-01-01T00:00:00.5+01:00'`, `{"operator":"lt","field":"d","value":1735686000.5}`},
		{`d in ('2025-01-01T00:00:00Z', 5)`, `{"operator":"in","field":"d","value":[1735689600,5]}`},
		{`d = '2025-01-01T00:00:00Z'`, `{"operator":"eq","field":"d","value":"2025-01-01T00:00:00Z"}`},
		{`{"d":{"$gt":"2025-01-01T00:00:00Z"}}`, `{"operator":"gt","field":"d","value":1735689600}`},
		{`città = 'Città'`, `{"operator":"eq","field":"città","value":"Città"}`},
		{`x <> 1`, `{"operator":"neq","field":"x","value":1}`},
	}
	for _, tt := range tests {
		e, err := filter.Parse(tt.in)
		if err != nil {
			t.Errorf("Parse(%s): %v", tt.in, err)
			continue
		}
		got, err := filter.Format(e)
		if err != nil {
			t.Errorf("Format(%s): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("Format(Parse(%s)) =\n  %s\nwant\n  %s", tt.in, got, tt.want)
		}
		// Canonical output parses back to the same tree.
		back, err := filter.ParseJSON(got)
		if err != nil {
			t.Errorf("ParseJSON(%s): %v", got, err)
		} else if !reflect.DeepEqual(back, e) {
			t.Errorf("round trip of %s changed the tree", tt.in)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		in     string
		column int // 0: no position expected
		reason filter.Reason
		says   []string
	}{
		{`tenant = `, 10, "", []string{"expected a value", "tenant"}},
		{`tenant = 'acme`, 10, "", []string{"unterminated string"}},
		{`tenant = "acme"`, 10, "", []string{"single quotes"}},
		{`(a = 1`, 7, "", []string{`")"`}},
		{`a = 1 b = 2`, 7, "", []string{`"and"`}},
		{`a == 1`, 3, "", []string{`"="`}},
		{`not a = 1`, 5, "", []string{"operator"}},
		{`a = null`, 5, filter.ReasonNull, []string{"null", "a"}},
		{`tags contains any ()`, 20, "", []string{"at least one value", "tags"}},
		{`tags contains some ('a')`, 15, "", []string{`"any" or "all"`}},
		{`tags contains any ('a', 1)`, 1, filter.ReasonValue, []string{"tags", "strings only"}},
		{`year > 'soon'`, 1, filter.ReasonValue, []string{"year", "number"}},
		{`a = 1 and`, 10, "", []string{"field name"}},
		{`a = 1e999`, 5, "", []string{"out of range"}},
		{`a = -`, 5, "", []string{"malformed number"}},
		{`a ! 1`, 3, "", []string{"!="}},
		{`a = 1 %`, 7, "", []string{"unexpected character"}},
		{`{"a":`, 6, "", []string{"unexpected end"}},
		{`{"a":1} x`, 9, "", []string{"unexpected data"}},
		{`{"a":null}`, 0, filter.ReasonNull, []string{"null", "a"}},
		{`{"a":[1,2]}`, 0, filter.ReasonValue, []string{"$in", "a"}},
		{`{"a":{"$regex":"x"}}`, 0, filter.ReasonUnknownOperator, []string{"$regex", "a"}},
		{`{"$not":{"a":1}}`, 0, filter.ReasonUnknownOperator, []string{"$not"}},
		{`{}`, 0, filter.ReasonEmptyGroup, []string{"empty"}},
		{`{"$or":[]}`, 0, filter.ReasonEmptyGroup, []string{"or"}},
		{`{"a":{"$in":[]}}`, 0, filter.ReasonEmptyList, []string{"a", "at least one value"}},
		{`{"a":{"$in":[1,null]}}`, 0, filter.ReasonNull, []string{"a", "null"}},
		{`{"a":{"$eq":{"b":1}}}`, 0, filter.ReasonValue, []string{"a", "object"}},
		{`{"operator":"eq","field":"","value":1}`, 0, filter.ReasonEmptyField, []string{"empty field"}},
		{`{"operator":"eq","field":"a","value":1,"extra":2}`, 0, "", []string{`"extra"`}},
		{`{"operator":"like","field":"a","value":1}`, 0, filter.ReasonUnknownOperator, []string{`"like"`}},
		{`{"operator":"and","conditions":[]}`, 0, filter.ReasonEmptyGroup, []string{"at least one condition"}},
		{`{"operator":"in","field":"a","value":"x"}`, 0, filter.ReasonValue, []string{"list", "a"}},
		{`{"operator":"raw","store":"","fragment":"x"}`, 0, "", []string{"store"}},
		{`{"a":1,"a":2}`, 0, "", []string{"duplicate key"}},
	}
	for _, tt := range tests {
		_, err := filter.Parse(tt.in)
		if err == nil {
			t.Errorf("Parse(%s): no error", tt.in)
			continue
		}
		var se *filter.SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%s): %T is not a *SyntaxError", tt.in, err)
			continue
		}
		if tt.column != 0 && se.Column != tt.column {
			t.Errorf("Parse(%s): column %d, want %d (%v)", tt.in, se.Column, tt.column, err)
		}
		if tt.reason != "" {
			var fe *filter.Error
			if !errors.As(err, &fe) || fe.Reason != tt.reason {
				t.Errorf("Parse(%s): reason %v, want %s (%v)", tt.in, fe, tt.reason, err)
			}
		}
		for _, s := range tt.says {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("Parse(%s): %q does not say %q", tt.in, err, s)
			}
		}
	}
}

func TestParseBlankIsNoFilter(t *testing.T) {
	for _, in := range []string{"", "  ", "null"} {
		e, err := filter.Parse(in)
		if e != nil || err != nil {
			t.Errorf("Parse(%q) = %v, %v", in, e, err)
		}
	}
}

func TestShortFieldNamedOperator(t *testing.T) {
	// A short filter on a field called "operator" is not canonical JSON.
	e, err := filter.Parse(`{"operator":"eq"}`)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := filter.Format(e)
	if got != `{"operator":"eq","field":"operator","value":"eq"}` {
		t.Errorf("got %s", got)
	}
}

var testSchema = mustSchema(`{"fields":[
 {"name":"tenant","type":"string","required":true,"filterable":true},
 {"name":"lang","type":"string","filterable":true},
 {"name":"year","type":"integer","filterable":true},
 {"name":"price","type":"float","filterable":true},
 {"name":"draft","type":"boolean","filterable":true},
 {"name":"tags","type":"string[]","filterable":true},
 {"name":"notes","type":"string"}]}`)

func mustSchema(s string) *document.Schema {
	sc, err := document.ParseSchema([]byte(s))
	if err != nil {
		panic(err)
	}
	return sc
}

func TestValidate(t *testing.T) {
	tests := []struct {
		in     string
		reason filter.Reason // "" = valid
		field  string
		says   string
	}{
		{`tenant = 'acme' and (year >= 2025 or tags contains any ('go','rag'))`, "", "", ""},
		{`price >= 2 and price < 9.5`, "", "", ""},
		{`sourceType = 'file' and sourceName != 'a.txt'`, "", "", ""},
		{`tenant != 'acme'`, "", "", ""},
		{`year in (2024, 2025)`, "", "", ""},
		{`lang != 'de'`, filter.ReasonNeqOptional, "lang", "required"},
		{`lang > 3`, filter.ReasonNotNumeric, "lang", "numeric"},
		{`lang > '2025-01-01T00:00:00Z'`, filter.ReasonNotNumeric, "lang", "numeric"},
		{`draft >= 1`, filter.ReasonNotNumeric, "draft", "numeric"},
		{`missing = 1`, filter.ReasonUndeclared, "missing", "not declared"},
		{`content = 'x'`, filter.ReasonUndeclared, "content", "not declared"},
		{`id = 'x'`, filter.ReasonUndeclared, "id", "not declared"},
		{`notes = 'x'`, filter.ReasonNotFilterable, "notes", "not filterable"},
		{`tags = 'go'`, filter.ReasonListField, "tags", "contains_any"},
		{`tags in ('go')`, filter.ReasonListField, "tags", "contains_any"},
		{`lang contains any ('en')`, filter.ReasonNotList, "lang", "string[]"},
		{`year = '2026'`, filter.ReasonType, "year", "expects integer"},
		{`year = 2026.0`, filter.ReasonType, "year", "expects integer"},
		{`year in (2020, '2021')`, filter.ReasonType, "year", "expects integer"},
		{`price = 'x'`, filter.ReasonType, "price", "expects float"},
		{`draft = 1`, filter.ReasonType, "draft", "expects boolean"},
		{`tenant = 1`, filter.ReasonType, "tenant", "expects string"},
	}
	for _, tt := range tests {
		e, err := filter.Parse(tt.in)
		if err != nil {
			t.Errorf("Parse(%s): %v", tt.in, err)
			continue
		}
		err = filter.Validate(e, testSchema)
		if tt.reason == "" {
			if err != nil {
				t.Errorf("Validate(%s): %v", tt.in, err)
			}
			continue
		}
		var fe *filter.Error
		if !errors.As(err, &fe) {
			t.Errorf("Validate(%s) = %v, want a *filter.Error", tt.in, err)
			continue
		}
		if fe.Reason != tt.reason || fe.Field != tt.field {
			t.Errorf("Validate(%s): reason %s field %q, want %s %q", tt.in, fe.Reason, fe.Field, tt.reason, tt.field)
		}
		if !strings.Contains(err.Error(), `"`+tt.field+`"`) || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("Validate(%s): %q should name %q and say %q", tt.in, err, tt.field, tt.says)
		}
	}
}

func TestValidateRaw(t *testing.T) {
	e := filter.And(filter.Eq("tenant", "a"), filter.NewRaw("qdrant", map[string]any{"must": []any{}}))
	if err := filter.Validate(e, testSchema); err != nil {
		t.Fatalf("raw fragments skip validation: %v", err)
	}
	if err := filter.RejectRaw(e, "qdrant"); err != nil {
		t.Errorf("qdrant store refused its own fragment: %v", err)
	}
	err := filter.RejectRaw(e, "postgres")
	var fe *filter.Error
	if !errors.As(err, &fe) || fe.Reason != filter.ReasonRaw || !strings.Contains(err.Error(), "qdrant") {
		t.Errorf("RejectRaw(postgres) = %v", err)
	}
	if _, err := filter.NewMatcher(e); err == nil {
		t.Error("in-process evaluation accepted a raw fragment")
	}
}

func TestMerge(t *testing.T) {
	tenant := filter.Eq("tenant", "acme")
	caller := filter.Or(filter.Eq("public", true), filter.Eq("owner", "me"))
	if filter.Merge() != nil || filter.Merge(nil, nil) != nil {
		t.Error("Merge of nothing is not nil")
	}
	var typedNil *filter.Condition
	if got := filter.Merge(nil, tenant, typedNil); got != filter.Expr(tenant) {
		t.Errorf("single scope not returned unchanged: %v", got)
	}
	got, _ := filter.Format(filter.Merge(tenant, caller))
	want := `{"operator":"and","conditions":[{"operator":"eq","field":"tenant","value":"acme"},{"operator":"or","conditions":[{"operator":"eq","field":"public","value":true},{"operator":"eq","field":"owner","value":"me"}]}]}`
	if got != want {
		t.Errorf("Merge = %s", got)
	}
	// A caller's or can never relax a scope: the scope stays a top-level conjunct.
	m, err := filter.NewMatcher(filter.Merge(tenant, caller))
	if err != nil {
		t.Fatal(err)
	}
	if m.MatchMap(map[string]any{"tenant": "evil", "public": true}) {
		t.Error("caller's or widened the tenant scope")
	}
}

func TestEvaluate(t *testing.T) {
	doc := document.New("Refunds take five days.")
	doc.SourceType, doc.SourceName = "file", "docs/refunds.md"
	doc.Metadata = map[string]any{
		"tenant": "acme", "year": int64(2024), "price": 9.5, "draft": false,
		"tags": []any{"go", "rag"}, "code": "42", "n": 7, "typed": []string{"x", "y"},
		"nothing": nil,
	}
	tests := []struct {
		f    string
		want bool
	}{
		{`tenant = 'acme'`, true},
		{`tenant = 'ACME'`, false},
		{`year = 2024.0`, true},
		{`year in (1999, 2024.0)`, true},
		{`year > 2023.5 and year < 2025`, true},
		{`year >= 2024 and year <= 2024`, true},
		{`price > 9`, true},
		{`n = 7`, true},
		{`code = 42`, false},
		{`code in ('42.0')`, false},
		{`code > 1`, false},
		{`draft = false`, true},
		{`draft in (0, 1)`, false},
		{`tags contains any ('rag', 'x')`, true},
		{`tags contains all ('go', 'rag', 'go')`, true},
		{`tags contains all ('go', 'x')`, false},
		{`typed contains any ('y')`, true},
		{`tenant contains any ('acme')`, false},
		{`missing != 'x'`, false},
		{`missing = 'x' or tenant = 'acme'`, true},
		{`nothing != 'x'`, false},
		{`sourceType = 'file' and sourceName = 'docs/refunds.md'`, true},
		{`content = 'Refunds take five days.'`, true},
		{`tenant != 'acme'`, false},
		{`tenant != 'other'`, true},
	}
	for _, tt := range tests {
		e, err := filter.Parse(tt.f)
		if err != nil {
			t.Fatalf("Parse(%s): %v", tt.f, err)
		}
		m, err := filter.NewMatcher(e)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.MatchDocument(doc); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.f, got, tt.want)
		}
	}
	m, _ := filter.NewMatcher(nil)
	if !m.MatchDocument(doc) {
		t.Error("a nil filter must match everything")
	}
}

func TestConstructorsNormalise(t *testing.T) {
	type lang string
	ts := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	c := filter.In("x", lang("en"), ts, uint8(3), float32(1.5), int32(-2))
	want := []any{"en", int64(1735689600), int64(3), 1.5, int64(-2)}
	if !reflect.DeepEqual(c.Value, want) {
		t.Errorf("In normalised to %#v", c.Value)
	}
	if err := filter.Check(filter.Eq("x", struct{}{})); err == nil {
		t.Error("struct value accepted")
	}
	if err := filter.Check(filter.And()); err == nil {
		t.Error("empty group accepted")
	}
	if err := filter.Check(filter.Eq("", 1)); err == nil {
		t.Error("empty field accepted")
	}
	if got := filter.Fields(filter.And(filter.Eq("a", 1), filter.Or(filter.Eq("b", 1), filter.Eq("a", 2)))); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("Fields = %v", got)
	}
}

func TestCheckRequest(t *testing.T) {
	raw := filter.NewRaw("postgres", "true")
	for _, tc := range []struct {
		name  string
		e     filter.Expr
		allow bool
		ok    bool
	}{
		{"portable", filter.Eq("sourceName", "a"), false, true},
		{"raw alone", raw, false, false},
		{"raw in or", filter.Or(filter.Eq("sourceName", "a"), raw), false, false},
		{"raw deep", filter.And(filter.Eq("sourceName", "a"), filter.Or(filter.Eq("sourceType", "b"), filter.And(raw, filter.Eq("sourceName", "c")))), false, false},
		{"raw allowed", filter.Or(filter.Eq("sourceName", "a"), raw), true, true},
		{"invalid still invalid when raw allowed", filter.Eq("nope", 1), true, false},
	} {
		err := filter.CheckRequest(tc.e, nil, filter.RequestPolicy{AllowRaw: tc.allow})
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
		var fe *filter.Error
		if err != nil && !tc.allow && tc.name != "invalid still invalid when raw allowed" && (!errors.As(err, &fe) || fe.Reason != filter.ReasonRawRefused) {
			t.Errorf("%s: reason of %v", tc.name, err)
		}
	}
}

package filter_test

import (
	"testing"

	"github.com/quarry-rag/quarry/filter"
)

func TestParseValue(t *testing.T) {
	for _, tc := range []struct {
		name, raw, want string // want is canonical JSON; "" for no filter
		err             bool
	}{
		{"nothing", ``, "", false},
		{"null", `null`, "", false},
		{"blank string", `"  "`, "", false},
		{"text in a string", `"year >= 2024 and tenant = 'acme'"`, `{"operator":"and","conditions":[{"operator":"gte","field":"year","value":2024},{"operator":"eq","field":"tenant","value":"acme"}]}`, false},
		{"JSON in a string", `"{\"tenant\":\"acme\"}"`, `{"operator":"eq","field":"tenant","value":"acme"}`, false},
		{"short object keeps key order", `{"b":1,"a":2}`, `{"operator":"and","conditions":[{"operator":"eq","field":"b","value":1},{"operator":"eq","field":"a","value":2}]}`, false},
		{"canonical object", `{"operator":"eq","field":"tenant","value":"acme"}`, `{"operator":"eq","field":"tenant","value":"acme"}`, false},
		{"or stays a group", `{"$or":[{"tenant":"a"},{"tenant":"b"}]}`, `{"operator":"or","conditions":[{"operator":"eq","field":"tenant","value":"a"},{"operator":"eq","field":"tenant","value":"b"}]}`, false},
		{"number", `5`, "", true},
		{"array", `[{"tenant":"a"}]`, "", true},
		{"bad text", `"year >>= 1"`, "", true},
		{"bad string", `"unterminated`, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := filter.ParseValue([]byte(tc.raw))
			if tc.err {
				if err == nil {
					t.Fatalf("ParseValue(%s) succeeded", tc.raw)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if e != nil {
					t.Fatalf("ParseValue(%s) = %v, want no filter", tc.raw, e)
				}
				return
			}
			got, err := filter.Format(e)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("ParseValue(%s) = %s, want %s", tc.raw, got, tc.want)
			}
		})
	}
}

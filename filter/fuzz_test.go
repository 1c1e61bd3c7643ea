package filter_test

import (
	"reflect"
	"testing"

	"github.com/quarry-rag/quarry/filter"
)

// roundTrip checks the printing contract: a parsed filter prints to
// canonical JSON that parses back to the same tree, and printing is stable.
func roundTrip(t *testing.T, e filter.Expr) {
	t.Helper()
	out, err := filter.Format(e)
	if err != nil {
		t.Fatalf("parsed filter does not print: %v", err)
	}
	back, err := filter.ParseJSON(out)
	if err != nil {
		t.Fatalf("canonical output %s does not parse: %v", out, err)
	}
	if !reflect.DeepEqual(back, e) {
		t.Fatalf("round trip changed the tree:\n%#v\n%#v", e, back)
	}
	again, _ := filter.Format(back)
	if again != out {
		t.Fatalf("printing is not stable: %s vs %s", out, again)
	}
}

var fuzzSeeds = []string{
	`tenant = 'acme' and (year >= 2025 or tags contains any ('go','rag'))`,
	`a = 1 or b != 'x''y' and c in (1, 2.5, true, 'z')`,
	`((a > -1e3))`,
	`d < '2025-01-01T00:00:00.5+01:00'`,
	`{"tenant":"acme","$or":[{"year":{"$gte":2025}},{"tags":{"$containsAny":["go","rag"]}}]}`,
	`{"year":{"$gte":2020,"$lt":2026},"$raw":{"store":"qdrant","fragment":{"a":[1,2.0]}}}`,
	canonicalTour,
	`{"operator":"raw","store":"postgres","fragment":"x"}`,
	`{"operator":"or","conditions":[{"operator":"and","conditions":[{"operator":"eq","field":"a","value":1.0}]}]}`,
}

func FuzzParseText(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := filter.ParseText(s)
		if err != nil {
			return
		}
		roundTrip(t, e)
	})
}

func FuzzParseJSON(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := filter.ParseJSON(s)
		if err != nil {
			return
		}
		roundTrip(t, e)
	})
}

func FuzzParseShort(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := filter.ParseShort(s)
		if err != nil {
			return
		}
		roundTrip(t, e)
	})
}

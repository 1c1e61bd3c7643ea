package filter

import (
	"math"
	"testing"

	"github.com/quarry-rag/quarry/document"
)

func TestStoredValue(t *testing.T) {
	for _, tc := range []struct {
		typ  document.FieldType
		in   any
		want any
		ok   bool
	}{
		{document.TypeString, "en", "en", true},
		{document.TypeString, int64(1), nil, false},
		{document.TypeBoolean, false, false, true},
		{document.TypeInteger, int64(7), int64(7), true},
		{document.TypeInteger, 7.0, int64(7), true},
		{document.TypeInteger, 7.5, nil, false},
		{document.TypeInteger, math.Inf(1), nil, false},
		{document.TypeInteger, "7", nil, false},
		{document.TypeFloat, int64(2), 2.0, true},
		{document.TypeFloat, 2.5, 2.5, true},
		{document.TypeFloat, true, nil, false},
	} {
		got, ok := StoredValue(tc.typ, tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("StoredValue(%s, %v) = %v, %v; want %v, %v", tc.typ, tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestNumericBound(t *testing.T) {
	for _, tc := range []struct {
		op   Op
		typ  document.FieldType
		in   any
		want any
		fold Fold
	}{
		{OpGt, document.TypeInteger, int64(2020), int64(2020), Depends},
		{OpGt, document.TypeInteger, 2020.5, int64(2020), Depends},
		{OpGte, document.TypeInteger, 2020.5, int64(2021), Depends},
		{OpLt, document.TypeInteger, 2020.5, int64(2021), Depends},
		{OpLte, document.TypeInteger, 2020.5, int64(2020), Depends},
		{OpLt, document.TypeInteger, 1e300, nil, Always},
		{OpGt, document.TypeInteger, 1e300, nil, Never},
		{OpGte, document.TypeInteger, -1e300, nil, Always},
		{OpLte, document.TypeInteger, -1e300, nil, Never},
		{OpLt, document.TypeFloat, int64(9), 9.0, Depends},
		{OpLt, document.TypeFloat, 9.5, 9.5, Depends},
		{OpLt, document.TypeFloat, "9", nil, Never},
	} {
		got, fold := NumericBound(tc.op, tc.typ, tc.in)
		if got != tc.want || fold != tc.fold {
			t.Errorf("NumericBound(%s, %s, %v) = %v, %v; want %v, %v", tc.op, tc.typ, tc.in, got, fold, tc.want, tc.fold)
		}
	}
}

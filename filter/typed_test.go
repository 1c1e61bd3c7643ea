package filter

import (
	"math"
	"slices"
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

// TestFoldGroup: constants decide a group or drop out of it, as every
// folding compiler needs.
func TestFoldGroup(t *testing.T) {
	// Conditions on field "a" fold to Always, on "n" to Never, others
	// depend on the document and compile to their field's name.
	compile := func(e Expr) (string, Fold, error) {
		switch e.(*Condition).Field {
		case "a":
			return "", Always, nil
		case "n":
			return "", Never, nil
		}
		return e.(*Condition).Field, Depends, nil
	}
	tests := []struct {
		name  string
		g     Expr
		parts []string
		fold  Fold
	}{
		{"and drops an always", And(Eq("x", 1), Eq("a", 1), Eq("y", 1)), []string{"x", "y"}, Depends},
		{"and with a never", And(Eq("x", 1), Eq("n", 1)), nil, Never},
		{"and of alwayses", And(Eq("a", 1), Eq("a", 2)), nil, Always},
		{"or drops a never", Or(Eq("x", 1), Eq("n", 1)), []string{"x"}, Depends},
		{"or with an always", Or(Eq("x", 1), Eq("a", 1)), nil, Always},
		{"or of nevers", Or(Eq("n", 1), Eq("n", 2)), nil, Never},
	}
	for _, tt := range tests {
		parts, fold, err := FoldGroup(tt.g.(*Group), compile)
		if err != nil || fold != tt.fold || !slices.Equal(parts, tt.parts) {
			t.Errorf("%s: %v %v %v", tt.name, parts, fold, err)
		}
	}
}

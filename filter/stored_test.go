package filter

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/quarry-rag/quarry/document"
)

// TestStored: metadata as JSON gives it and as Go code builds it is kept
// in one form per field type; a value of another type is an error.
func TestStored(t *testing.T) {
	for _, tc := range []struct {
		typ  document.FieldType
		in   any
		want any
		bad  bool
	}{
		{document.TypeString, "a", "a", false},
		{document.TypeInteger, float64(3), int64(3), false},
		{document.TypeInteger, 3, int64(3), false},
		{document.TypeInteger, int32(3), int64(3), false},
		{document.TypeInteger, json.Number("3"), int64(3), false},
		{document.TypeInteger, 3.5, nil, true},
		{document.TypeFloat, float32(0.5), 0.5, false},
		{document.TypeFloat, json.Number("0.25"), 0.25, false},
		{document.TypeFloat, int64(2), 2.0, false},
		{document.TypeBoolean, true, true, false},
		{document.TypeBoolean, "true", nil, true},
		{document.TypeStringList, []any{"x", "y"}, []string{"x", "y"}, false},
		{document.TypeStringList, []string{"x"}, []string{"x"}, false},
		{document.TypeStringList, []any{"x", 1.0}, nil, true},
		{document.TypeStringList, "x", nil, true},
	} {
		got, err := Stored(tc.typ, tc.in)
		if (err != nil) != tc.bad || !tc.bad && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Stored(%s, %#v) = %#v, %v; want %#v", tc.typ, tc.in, got, err, tc.want)
		}
	}
}

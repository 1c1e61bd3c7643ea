package server_test

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/eval"
	"github.com/quarry-rag/quarry/server"
)

// TestBodyBoundsAreTheCores: struct tags cannot name constants, so the
// bounds the OpenAPI document states are held to the core's here.
func TestBodyBoundsAreTheCores(t *testing.T) {
	f, _ := reflect.TypeFor[server.CalibrateBody]().FieldByName("Queries")
	if got := f.Tag.Get("maximum"); got != strconv.Itoa(quarry.MaxCalibrationQueries) {
		t.Errorf("CalibrateBody.Queries maximum %s, the core's %d", got, quarry.MaxCalibrationQueries)
	}
	if doc := f.Tag.Get("doc"); !strings.Contains(doc, "("+strconv.Itoa(eval.CalibrationQueries)+" when 0)") {
		t.Errorf("CalibrateBody.Queries says %q; the core's default is %d", doc, eval.CalibrationQueries)
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[server.SearchBody](), reflect.TypeFor[server.AskBody]()} {
		f, _ := typ.FieldByName("Profile")
		if f.Tag.Get("maxLength") != "48" {
			t.Errorf("%s.Profile maxLength %s: profile names are at most 48 characters", typ.Name(), f.Tag.Get("maxLength"))
		}
	}
}

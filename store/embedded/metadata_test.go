package embedded_test

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/internal/conformance"
	"github.com/quarry-rag/quarry/store/embedded"
)

// TestMetadataMapperConformance runs the metadata-mapper seed cases; the
// seed's _neuron_metadata key is Quarry's _quarry_metadata.
func TestMetadataMapperConformance(t *testing.T) {
	cases := conformance.Load(t, "neuron.metadata_mapper")
	diffs := conformance.LoadDifferences(t, filepath.Join("testdata", "conformance_differences.json"))
	conformance.Run(t, cases, diffs, func(c conformance.Case) []conformance.Result {
		var in struct {
			Schema   json.RawMessage            `json:"schema"`
			Metadata json.RawMessage            `json:"metadata"`
			Hydrate  map[string]json.RawMessage `json:"hydrate"`
		}
		var exp struct {
			Storage map[string]json.RawMessage `json:"storage"`
			Error   *conformance.ExpectedError `json:"error"`
		}
		if err := c.Decode(&in, &exp); err != nil {
			return conformance.Of(err)
		}
		if in.Hydrate != nil {
			stored := map[string]any{}
			for k, v := range in.Hydrate {
				if k == "_neuron_metadata" {
					k = embedded.MetadataKey
				}
				dv, err := document.DecodeJSONValue(v)
				if err != nil {
					return conformance.Of(err)
				}
				stored[k] = dv
			}
			_, err := embedded.Hydrate(stored)
			if err == nil {
				return conformance.Fail("corrupt payload accepted")
			}
			want := strings.ToLower(strings.TrimSuffix(exp.Error.Message, "."))
			if strings.Contains(want, "reserved") {
				return conformance.Of(conformance.NamesQuoted(exp.Error.Message, err.Error()))
			}
			if !strings.Contains(strings.ToLower(err.Error()), want) {
				return conformance.Fail("message %q does not say %q", err, want)
			}
			return conformance.Pass()
		}
		s, err := document.ParseSchema(in.Schema)
		if err != nil {
			return conformance.Of(err)
		}
		v, err := document.DecodeJSONValue(in.Metadata)
		if err != nil {
			return conformance.Of(err)
		}
		md := v.(map[string]any)
		stored, err := embedded.ToStorage(s, md)
		if err != nil {
			return conformance.Of(err)
		}
		for k, raw := range exp.Storage {
			if k == "_neuron_metadata" {
				continue
			}
			want, _ := document.DecodeJSONValue(raw)
			if !reflect.DeepEqual(stored[k], want) {
				return conformance.Fail("projected %s = %#v, want %#v", k, stored[k], want)
			}
		}
		back, err := embedded.Hydrate(stored)
		if err != nil {
			return conformance.Of(err)
		}
		if !reflect.DeepEqual(back, md) {
			return conformance.Fail("round trip: %#v, want %#v", back, md)
		}
		return conformance.Pass()
	})
}

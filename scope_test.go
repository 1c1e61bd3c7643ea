package quarry_test

import (
	"errors"
	"testing"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/filter"
)

// TestMayIngestPaths is the rule every surface asks before it ingests the
// server's own files.
func TestMayIngestPaths(t *testing.T) {
	for _, tc := range []struct {
		name string
		sc   quarry.Scope
		ok   bool
	}{
		{"developer", quarry.Developer(), true},
		{"admin key", quarry.Scope{Collections: []string{"kb"}}, true},
		{"read-only", quarry.Scope{ReadOnly: true}, false},
		{"filtered", quarry.Scope{Filter: filter.Eq("tenant", "acme")}, false},
		{"below admin", quarry.Scope{NoServerPaths: true}, false},
	} {
		err := tc.sc.MayIngestPaths()
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, quarry.ErrForbidden)) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

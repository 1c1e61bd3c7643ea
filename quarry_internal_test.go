package quarry

import (
	"testing"

	"github.com/quarry-rag/quarry/config"
)

func TestStoreURLHidesPassword(t *testing.T) {
	for _, tc := range []struct{ store, dir, want string }{
		{"postgres://quarry:s3cret@db.internal:5432/kb?sslmode=require", "", "postgres://quarry:xxxxx@db.internal:5432/kb?sslmode=require"},
		{"postgres://quarry@db.internal/kb", "", "postgres://quarry@db.internal/kb"},
		{"", "/srv/kb", "embedded:/srv/kb"},
		{"memory:", "", "memory:"},
	} {
		kb := &KB{dir: tc.dir, cfg: config.Config{Store: tc.store}}
		if got := kb.StoreURL(); got != tc.want {
			t.Errorf("StoreURL(%q) = %q, want %q", tc.store, got, tc.want)
		}
	}
}

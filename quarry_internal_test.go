package quarry

import (
	"context"
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

// TestUploadsReadByTheUntrustedLoader checks files a caller uploads are
// read by the PDF engine a done context stops mid-page, and the
// operator's own folders by the faster one.
func TestUploadsReadByTheUntrustedLoader(t *testing.T) {
	ctx := context.Background()
	kb, err := Open(ctx, "memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer kb.Close()
	dir := t.TempDir()
	up, err := kb.prepareIngest(ctx, Scope{}, IngestRequest{Paths: []string{dir}, Uploaded: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	own, err := kb.prepareIngest(ctx, Developer(), IngestRequest{Paths: []string{dir}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if up.Loader != kb.untrustedLoader() || own.Loader != kb.Loader() || up.Loader == own.Loader {
		t.Errorf("uploads read by %p, folders by %p; want the untrusted loader %p and the loader %p", up.Loader, own.Loader, kb.untrustedLoader(), kb.Loader())
	}
}

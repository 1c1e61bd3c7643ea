package keys

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.json")
	kf, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if kf.Active() {
		t.Fatal("an empty key file is active")
	}
	k, token, err := kf.Create(Spec{Name: "n", Permission: PermRead, Filter: `{"tenant":"acme"}`})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), token[len(token)-30:]) {
		t.Fatal("the key's secret is stored")
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v", st.Mode().Perm())
	}
	if k.Filter != `{"operator":"eq","field":"tenant","value":"acme"}` {
		t.Errorf("filter stored as %s", k.Filter)
	}
	other, _ := Open(path)
	if got, ok := other.Lookup(token); !ok || got.ID != k.ID {
		t.Fatal("a second reader does not find the key")
	}
	if _, ok := other.Lookup(token + "x"); ok {
		t.Fatal("a wrong token is accepted")
	}
	for _, bad := range []Spec{{Permission: "root"}, {Permission: PermRead, Filter: "tenant ="}, {Permission: PermRead, RateLimit: -1}} {
		if _, _, err := kf.Create(bad); err == nil {
			t.Errorf("Create(%+v) succeeded", bad)
		}
	}
	if err := kf.Revoke("nope"); err == nil {
		t.Error("revoking an unknown key succeeded")
	}
}

func TestKeyRights(t *testing.T) {
	for _, tc := range []struct {
		k               Key
		write, reachAll bool
	}{
		{Key{Permission: PermRead}, false, false},
		{Key{Permission: PermWrite}, true, false},
		{Key{Permission: PermAdmin}, true, true},
		{Key{Permission: PermAdmin, Filter: `{"operator":"eq","field":"tenant","value":"a"}`}, true, false},
		{Key{Permission: "root"}, false, false},
	} {
		if tc.k.MayWrite() != tc.write || tc.k.MayReachAll() != tc.reachAll {
			t.Errorf("%+v: MayWrite %v MayReachAll %v", tc.k, tc.k.MayWrite(), tc.k.MayReachAll())
		}
	}
}

func TestLoopbackPeer(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:80": true, "127.9.9.9:1": true, "[::1]:443": true, "::1": true,
		"192.0.2.1:80": false, "[2001:db8::1]:80": false, "localhost:80": false, "": false,
	} {
		if got := LoopbackPeer(addr); got != want {
			t.Errorf("LoopbackPeer(%q) = %v, want %v", addr, got, want)
		}
	}
}

// TestGuardFailsClosed: keyless admits loopback callers only; a key created
// later latches the guard keyed; revoking every key then refuses all.
func TestGuardFailsClosed(t *testing.T) {
	kf, err := Open(filepath.Join(t.TempDir(), "keys.json"))
	if err != nil {
		t.Fatal(err)
	}
	g := NewGuard(kf, nil)
	if _, keyed, err := g.Admit("127.0.0.1:1", ""); keyed || err != nil {
		t.Fatalf("keyless loopback: keyed %v, %v", keyed, err)
	}
	if _, _, err := g.Admit("192.0.2.1:1", ""); err != ErrNotLoopback {
		t.Fatalf("keyless remote: %v", err)
	}
	k, token, err := kf.Create(Spec{Permission: PermRead})
	if err != nil {
		t.Fatal(err)
	}
	if got, keyed, err := g.Admit("192.0.2.1:1", token); !keyed || err != nil || got.ID != k.ID {
		t.Fatalf("a valid key: %v %v %v", got.ID, keyed, err)
	}
	if _, _, err := g.Admit("127.0.0.1:1", ""); err != ErrNoKey {
		t.Fatalf("no key once keyed: %v", err)
	}
	if err := kf.Revoke(k.ID); err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{"", token} {
		if _, keyed, err := g.Admit("127.0.0.1:1", tok); !keyed || err != ErrNoActiveKey {
			t.Fatalf("after the last key went (token %q): keyed %v, %v", tok, keyed, err)
		}
	}
}

package quarry

import (
	"cmp"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/quarry-rag/quarry/config"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/keys"
)

// keysFileName is where a knowledge base keeps its API keys, hashed.
const keysFileName = "keys.json"

// Keys opens the knowledge base's API keys (keys.json in its directory;
// in the working directory for a knowledge base without one).
func (kb *KB) Keys() (*keys.File, error) {
	return keys.Open(filepath.Join(kb.dir, keysFileName))
}

// OpenKeys opens the API keys of the knowledge base in dir, or of the one
// found upward from the working directory when dir is "" (ErrNoKB when
// there is none), without opening its store.
func OpenKeys(dir string) (*keys.File, error) {
	if dir == "" {
		d, found, err := config.FindKB(".", nil)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, ErrNoKB
		}
		dir = d
	}
	return keys.Open(filepath.Join(dir, keysFileName))
}

// CheckProfileNames reports a name that is not one of the profiles of the
// knowledge base in dir ("" finds it upward), so a key is never limited to
// a profile that does not exist: such a key would reach nothing.
func CheckProfileNames(dir string, names []string) error {
	if len(names) == 0 {
		return nil
	}
	if dir == "" {
		d, found, err := config.FindKB(".", nil)
		if err != nil {
			return err
		}
		if !found {
			return ErrNoKB
		}
		dir = d
	}
	cfg, err := config.Load(dir, nil)
	if err != nil {
		return invalid(err)
	}
	for _, n := range names {
		if _, ok := cfg.Profiles[n]; !ok {
			have := slices.Sorted(maps.Keys(cfg.Profiles))
			return invalid(fmt.Errorf("%w %q in %s (profiles: %s)", ErrNoProfile, n, filepath.Join(dir, config.FileName),
				cmp.Or(strings.Join(have, ", "), "none; define them as [profiles.NAME]")))
		}
	}
	return nil
}

// KeyScope is the scope of a request made with key k on a surface whose
// own scope is base: base narrowed by the key's collections, filter and
// profiles. A read key may change nothing and only an admin key that
// reaches every document may ingest the server's paths; a key's threads
// are its own. The HTTP and MCP servers both take their callers' scopes
// from it.
func KeyScope(base Scope, k keys.Key) (Scope, error) {
	f, err := k.Scope()
	if err != nil {
		return Scope{}, err
	}
	sc := base
	sc.Filter = filter.Merge(base.Filter, f)
	sc.Collections = narrow(base.Collections, k.Collections)
	sc.Profiles = narrow(base.Profiles, k.Profiles)
	sc.AllowRawFilters = k.FilterPolicy(base.AllowRawFilters).AllowRaw
	sc.ReadOnly = base.ReadOnly || !k.MayWrite()
	sc.NoServerPaths = base.NoServerPaths || !k.MayReachAll()
	sc.Owner = k.ID
	return sc, nil
}

// narrow is the limit two limits leave (empty: none): what both allow. Two
// limits that share nothing leave a name no collection or profile has, so
// the result still refuses everything rather than meaning "no limit".
func narrow(a, b []string) []string {
	switch {
	case len(a) == 0:
		return slices.Clone(b)
	case len(b) == 0:
		return slices.Clone(a)
	}
	var out []string
	for _, x := range b {
		if slices.Contains(a, x) {
			out = append(out, x)
		}
	}
	if len(out) == 0 {
		out = []string{"\x00none"}
	}
	return out
}

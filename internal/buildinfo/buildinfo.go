// Package buildinfo says which Quarry is running: the module version Go
// recorded in the binary and, for builds from a checkout, the commit.
package buildinfo

import (
	"runtime/debug"
	"strings"
)

// Version is Quarry's version: the module version for a released build
// ("v1.2.0"), otherwise "devel" followed by the commit the binary was
// built from ("devel+3f9c0a1b2c3d", "-dirty" when the tree had changes),
// or "devel" alone when Go recorded neither.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return version(bi)
}

func version(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v != "" && v != "(devel)" && !strings.HasPrefix(v, "v0.0.0-") {
		return v
	}
	var rev string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		if strings.HasPrefix(v, "v0.0.0-") {
			return v // a pseudo-version names its commit already
		}
		return "devel"
	}
	out := "devel+" + rev[:min(12, len(rev))]
	if dirty {
		out += "-dirty"
	}
	return out
}

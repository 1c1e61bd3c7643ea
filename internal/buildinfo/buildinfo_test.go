package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestVersion(t *testing.T) {
	for _, tc := range []struct {
		main     string
		settings []debug.BuildSetting
		want     string
	}{
		{"v1.2.0", nil, "v1.2.0"},
		{"(devel)", []debug.BuildSetting{{Key: "vcs.revision", Value: "3f9c0a1b2c3d4e5f6a7b"}, {Key: "vcs.modified", Value: "false"}}, "devel+3f9c0a1b2c3d"},
		{"(devel)", []debug.BuildSetting{{Key: "vcs.revision", Value: "3f9c0a1b2c3d4e5f6a7b"}, {Key: "vcs.modified", Value: "true"}}, "devel+3f9c0a1b2c3d-dirty"},
		{"(devel)", nil, "devel"},
		{"v0.0.0-20261201212639-3f9c0a1b2c3d", nil, "v0.0.0-20261201212639-3f9c0a1b2c3d"},
	} {
		bi := &debug.BuildInfo{Main: debug.Module{Version: tc.main}, Settings: tc.settings}
		if got := version(bi); got != tc.want {
			t.Errorf("version(%q, %v) = %q, want %q", tc.main, tc.settings, got, tc.want)
		}
	}
	if Version() == "" {
		t.Error("Version is empty")
	}
}

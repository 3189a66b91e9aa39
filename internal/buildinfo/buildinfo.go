// Package buildinfo says which frognano this is: set at link time, else read from the
// Go build's version-control stamp.
package buildinfo

import "runtime/debug"

// Version is set with -ldflags "-X github.com/frognano/frognano/internal/buildinfo.Version=…".
var Version = ""

// String is the version: the linked one, else "dev+<commit>[-dirty]", else "dev".
func String() string {
	if Version != "" {
		return Version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	v := "dev"
	if rev := settings["vcs.revision"]; rev != "" {
		v += "+" + rev[:min(12, len(rev))]
		if settings["vcs.modified"] == "true" {
			v += "-dirty"
		}
	}
	return v
}

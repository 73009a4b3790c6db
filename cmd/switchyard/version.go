package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is the release version, set by the release build (scripts/release.sh:
// -ldflags "-X main.version=v1.2.3"). Empty: the module version from the build info is used
// ("(devel)" for a build from a checkout, the tag for `go install ...@v1.2.3`).
var version string

// revision is the VCS revision, set by the release build (-X main.revision=...) for builds
// where the go command records none (-buildvcs=false, a source tarball); the build info's
// vcs.revision wins when present.
var revision string

// versionString is the one line `switchyard --version` prints: version, VCS revision (12 hex
// digits, "+dirty" when the tree had changes) and commit time when the binary was built from a
// git checkout, and the Go version, e.g. "switchyard v0.3.0 (rev 1a2b3c4d5e6f, 2026-12-01T10:00:00Z) go1.26.0 linux/amd64".
func versionString() string {
	bi, _ := debug.ReadBuildInfo()
	return formatVersion(bi, version, revision)
}

// formatVersion is versionString from build info bi (nil: none) and the -ldflags values.
func formatVersion(bi *debug.BuildInfo, version, revision string) string {
	v, rev, at, dirty := version, revision, "", false
	if bi != nil {
		if v == "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	out := "switchyard " + v
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if dirty {
			rev += "+dirty"
		}
		out += " (rev " + rev
		if at != "" {
			out += ", " + at
		}
		out += ")"
	}
	return fmt.Sprintf("%s %s %s/%s", out, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

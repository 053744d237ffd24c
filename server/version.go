package server

import (
	"cmp"
	"fmt"
	"net/http"
	"runtime/debug"
)

// BuildInfo says which gardend is running: GET /version, `gardend version`.
type BuildInfo struct {
	// Version is the module version (a tag or a pseudo-version), or "devel".
	Version string `json:"version"`
	// Revision is the VCS revision, or "unknown"; Modified marks uncommitted changes.
	Revision string `json:"revision"`
	Modified bool   `json:"modified"`
	// Time is the revision's commit time (RFC 3339), when known.
	Time string `json:"time,omitempty"`
	// Go is the Go version the binary was built with.
	Go string `json:"go"`
}

// ReadBuildInfo reads the binary's build information. fallback supplies what the go
// command could not stamp (it cannot in a linked git worktree, golang/go#58218, so
// release builds pass it with -ldflags -X); the binary's own information wins.
func ReadBuildInfo(fallback BuildInfo) BuildInfo {
	b := fallback
	b.Version = cmp.Or(b.Version, "devel")
	b.Revision = cmp.Or(b.Revision, "unknown")
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		b.Version = v
	}
	b.Go = info.GoVersion
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// String is the one-line form: gardend v1.2.3 (revision abc…+dirty 2026-11-22T04:30:50Z, go1.26.8).
func (b BuildInfo) String() string {
	rev := b.Revision
	if b.Modified {
		rev += "+dirty"
	}
	if b.Time != "" {
		rev += " " + b.Time
	}
	return fmt.Sprintf("gardend %s (revision %s, %s)", b.Version, rev, cmp.Or(b.Go, "unknown Go"))
}

func (s *Server) handleVersion(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, r, http.StatusOK, s.cfg.Build)
}

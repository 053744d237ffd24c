package cli

import (
	"cmp"
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the module version and VCS revision of this binary",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), versionString())
			return nil
		},
	}
}

// Stamped with -ldflags -X by .ci/cross-build where the go command cannot stamp VCS
// information itself: in a linked git worktree it does not find the repository
// (golang/go#58218). Build information, when present, wins.
var (
	stampVersion  string
	stampRevision string
	stampTime     string
	stampModified string
)

func versionString() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "gardend (no build information)"
	}
	version := info.Main.Version
	if version == "" || version == "(devel)" {
		version = cmp.Or(stampVersion, "devel")
	}
	rev, at, dirty := cmp.Or(stampRevision, "unknown"), "", ""
	if stampTime != "" {
		at = " " + stampTime
	}
	if stampModified == "true" {
		dirty = "+dirty"
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = " " + s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	return fmt.Sprintf("gardend %s (revision %s%s%s, %s)", version, rev, dirty, at, info.GoVersion)
}

package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gardend/gardend/server"
)

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the module version and VCS revision of this binary",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), buildInfo())
			return err
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

func buildInfo() server.BuildInfo {
	return server.ReadBuildInfo(server.BuildInfo{
		Version: stampVersion, Revision: stampRevision, Time: stampTime, Modified: stampModified == "true",
	})
}

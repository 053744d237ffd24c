// Package cli is gardend's command line: one file per command, each an options struct
// with flags and a RunE, writing to the command's output so tests can drive it.
package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// DefaultDataDir is used when neither --data nor GARDEND_DATA is given.
const DefaultDataDir = "./gardend-data"

type globalOptions struct {
	dataDir string
}

// NewRootCommand builds the whole command tree.
func NewRootCommand() *cobra.Command {
	g := &globalOptions{}
	root := &cobra.Command{
		Use:   "gardend",
		Short: "Garden management service: companies, gardens, beds and plants over HTTP",
		Long: `gardend serves an HTTP API for urban and agricultural gardens: accounts, companies,
gardens with georeferenced drone images, per-user roles, and beds and plants read from a
spatial data server over gRPC. Everything is kept in one data directory.

Every flag can also be set with an environment variable GARDEND_<FLAG> (for example
GARDEND_DATA or GARDEND_TOKEN_TTL); a flag on the command line wins.`,
		SilenceUsage:  true,
		SilenceErrors: false,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return applyEnv(cmd)
		},
	}
	root.PersistentFlags().StringVar(&g.dataDir, "data", DefaultDataDir, "data directory (database, images, point clouds)")
	root.AddCommand(
		newServeCommand(g),
		newAdminCommand(g),
		newUserCommand(g),
		newInspectCommand(g),
		newBedsCommand(g),
		newPointCloudsCommand(g),
		newSpatialDemoCommand(),
		newVersionCommand(),
		newBackupCommand(g),
		newRestoreCommand(g),
		newImportCommand(g),
	)
	return root
}

// EnvName is the environment variable of a flag: --token-ttl → GARDEND_TOKEN_TTL.
func EnvName(flag string) string {
	return "GARDEND_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// applyEnv fills every flag not set on the command line from its environment variable.
func applyEnv(cmd *cobra.Command) error {
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed || f.Name == "help" {
			return
		}
		if v, ok := os.LookupEnv(EnvName(f.Name)); ok {
			if e := cmd.Flags().Set(f.Name, v); e != nil {
				err = fmt.Errorf("%s=%q: %w", EnvName(f.Name), v, e)
			}
		}
	})
	return err
}

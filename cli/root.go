// Package cli is gardend's command line: one file per command, each an options struct
// with flags and a RunE, writing to the command's output so tests can drive it.
package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

// DefaultDataDir is used when neither --data nor GARDEND_DATA is given.
const DefaultDataDir = "./gardend-data"

type globalOptions struct {
	dataDir string
	// store is --store: "" for the bbolt file in dataDir, or a PostgreSQL URL.
	store string
	// configFile is the config file read (--config or GARDEND_CONFIG), if any.
	configFile string
}

// helpWidth is the widest line of any command's help, in characters.
const helpWidth = 100

// NewRootCommand builds the whole command tree.
func NewRootCommand() *cobra.Command {
	g := &globalOptions{}
	root := &cobra.Command{
		Use:   "gardend",
		Short: "Garden management service: companies, gardens, beds and plants over HTTP",
		Long: `gardend serves an HTTP API for urban and agricultural gardens: accounts, companies,
gardens with georeferenced drone images, per-user roles, and beds and plants read from a
spatial data server over gRPC. Everything is kept in one data directory.

Configuration flags (serve's flags, --data, the --spatial flags) can also be set with
an environment variable GARDEND_<FLAG> (for example GARDEND_DATA or GARDEND_TOKEN_TTL)
or in a TOML config file (--config FILE or GARDEND_CONFIG) with the flags' names as keys
(token-ttl = "2h"). A value is taken from the first of: the command line, the
environment, the config file, the default. Other flags (restore --force, inspect
--json, …) come from the command line only.`,
		SilenceUsage:  true,
		SilenceErrors: false,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return applyConfig(cmd, g)
		},
	}
	root.SetUsageFunc(writeUsage)
	// gardend --version says what gardend version says. Not cobra's Version field: its
	// output would need a template (see writeUsage) to say the same.
	var showVersion bool
	root.Flags().BoolVarP(&showVersion, "version", "v", false, "version for gardend")
	root.RunE = func(cmd *cobra.Command, _ []string) error {
		if showVersion {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), buildInfo())
			return err
		}
		return cmd.Help()
	}
	// cobra says what was wrong with a flag but not where to look.
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		//nolint:staticcheck // ST1005: printed as is, a sentence in cobra's own words
		return fmt.Errorf("%w\nRun '%s --help' for usage.", err, c.CommandPath())
	})
	root.PersistentFlags().StringVar(&g.dataDir, "data", DefaultDataDir, "data directory (database, images, point clouds)")
	root.PersistentFlags().StringVar(&g.configFile, "config", "", "TOML file of configuration flags (default: $"+ConfigEnv+")")
	root.PersistentFlags().StringVar(&g.store, "store", "", storeFlagHelp)
	markConfig(root.PersistentFlags(), "data", "store")
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
		newSiteCommand(g),
		newSyncCommand(g),
	)
	return root
}

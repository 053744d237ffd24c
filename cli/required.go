package cli

import "github.com/spf13/cobra"

// requireFlags marks flags required. Cobra fails only for a flag that is not defined,
// a mistake in the command's own code: panic, so that every test building the command
// tree finds it.
func requireFlags(cmd *cobra.Command, names ...string) {
	for _, name := range names {
		if err := cmd.MarkFlagRequired(name); err != nil {
			panic(err)
		}
	}
}

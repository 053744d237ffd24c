package cli

import "github.com/spf13/cobra"

func newUserCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "user",
		Short: "Manage user accounts",
	}
	cmd.AddCommand(newUserCreateCommand(g))
	return cmd
}

// newUserCreateCommand is `admin create` without site-admin rights: how accounts are
// made when serve runs with --registration closed.
func newUserCreateCommand(g *globalOptions) *cobra.Command {
	o := &userCreateOptions{global: g}
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create a normal user account (for --registration closed)",
		Long: `Create a user account with no administrator rights; the user then logs in through
the API like a self-registered one. The password is read from standard input with
--password-stdin, or prompted for (twice, without echo) when standard input is a
terminal. --first-name and --last-name are required, as on registration. Works whether
or not gardend serve is running on the data directory.`,
		Example: `  gardend user create --username bob --first-name Bob --last-name Gardener
  printf '%s\n' "$PASSWORD" |
    gardend user create --username bob --first-name Bob --last-name Gardener --password-stdin`,
		Args: cobra.NoArgs,
		RunE: o.run,
	}
	o.addFlags(cmd, "", "")
	return cmd
}

package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gardend/gardend/server"
)

func newUserCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "user",
		Short: "Manage user accounts",
	}
	cmd.AddCommand(newUserCreateCommand(g), newUserResetPasswordCommand(g))
	return cmd
}

type userResetPasswordOptions struct {
	global        *globalOptions
	passwordStdin bool
}

// newUserResetPasswordCommand sets a new password for an account, for one imported
// without a usable password or whose owner forgot it.
func newUserResetPasswordCommand(g *globalOptions) *cobra.Command {
	o := &userResetPasswordOptions{global: g}
	cmd := &cobra.Command{
		Use:   "reset-password NAME",
		Short: "Set a new password for an account and end its sessions",
		Long: `Set a new password for the account NAME and revoke every login token it has, for
an account imported without a usable password (its PlantMap hash was marked unusable,
is of a kind gardend does not verify, or costs too much to check; the import names
them) or whose owner forgot theirs. NAME is found as login finds it. The password is
read from standard input with --password-stdin, or prompted for (twice, without echo)
when standard input is a terminal; never from the command line, where other users
could read it. Works whether or not gardend serve is running on the data directory.`,
		Example: `  gardend user reset-password bob
  printf '%s\n' "$PASSWORD" | gardend user reset-password bob --password-stdin`,
		Args: cobra.ExactArgs(1),
		RunE: o.run,
	}
	cmd.Flags().BoolVar(&o.passwordStdin, "password-stdin", false, "read the password from the first line of standard input")
	return cmd
}

func (o *userResetPasswordOptions) run(cmd *cobra.Command, args []string) error {
	password, err := readPassword(cmd, o.passwordStdin)
	if err != nil {
		return err
	}
	u, err := adminCall(cmd.Context(), o.global, server.UsersResetPassword{Username: args[0], Password: password})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "password of %q (id %d) set; every login token of the account was revoked\n", u.Username, u.ID)
	return err
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

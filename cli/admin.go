package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/store"
)

func newAdminCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "admin",
		Short: "Manage site administrators",
	}
	cmd.AddCommand(newAdminCreateCommand(g))
	return cmd
}

type userCreateOptions struct {
	global        *globalOptions
	username      string
	passwordStdin bool
	firstName     string
	lastName      string
	email         string
	siteAdmin     bool
}

func newAdminCreateCommand(g *globalOptions) *cobra.Command {
	o := &userCreateOptions{global: g, siteAdmin: true}
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create a site administrator (admin of every company and garden)",
		Long: `Create a site administrator. The password is read from standard input with
--password-stdin, or prompted for (twice, without echo) when standard input is a
terminal. Works whether or not gardend serve is running on the data directory.`,
		Example: `  gardend admin create --username alice
  printf '%s\n' "$PASSWORD" | gardend admin create --username alice --password-stdin`,
		Args: cobra.NoArgs,
		RunE: o.run,
	}
	o.addFlags(cmd, "Site", "Administrator")
	return cmd
}

func (o *userCreateOptions) addFlags(cmd *cobra.Command, first, last string) {
	f := cmd.Flags()
	f.StringVar(&o.username, "username", "", "username (letters, digits and @ . + - _)")
	f.BoolVar(&o.passwordStdin, "password-stdin", false, "read the password from the first line of standard input")
	f.StringVar(&o.firstName, "first-name", first, "first name")
	f.StringVar(&o.lastName, "last-name", last, "last name")
	f.StringVar(&o.email, "email", "", "email address (optional)")
	requireFlags(cmd, "username")
}

func (o *userCreateOptions) run(cmd *cobra.Command, _ []string) error {
	if msg := store.ValidateUsername(o.username); msg != "" {
		return fmt.Errorf("--username: %s", msg)
	}
	// Checked before the password prompt, so a typo does not cost typing it twice.
	if msg := store.ValidateName(o.firstName); msg != "" {
		return fmt.Errorf("--first-name: %s", msg)
	}
	if msg := store.ValidateName(o.lastName); msg != "" {
		return fmt.Errorf("--last-name: %s", msg)
	}
	if msg := store.ValidateEmail(o.email); msg != "" {
		return fmt.Errorf("--email: %s", msg)
	}
	password, err := readPassword(cmd, o.passwordStdin)
	if err != nil {
		return err
	}
	u, err := adminCall(cmd.Context(), o.global, server.UsersCreate{
		Username: o.username, Password: password, FirstName: o.firstName, LastName: o.lastName,
		Email: o.email, SiteAdmin: o.siteAdmin,
	})
	if err != nil {
		return err
	}
	kind := "user"
	if u.SiteAdmin {
		kind = "site administrator"
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "created %s %q (id %d)\n", kind, u.Username, u.ID)
	return err
}

// readPassword takes the first line of stdin, or prompts twice on a terminal.
func readPassword(cmd *cobra.Command, fromStdin bool) (string, error) {
	in := cmd.InOrStdin()
	if fromStdin {
		line, err := bufio.NewReader(in).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", fmt.Errorf("read password from stdin: %w", err)
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			return "", errors.New("--password-stdin: standard input is empty; pipe the password in")
		}
		return line, nil
	}
	f, ok := in.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return "", errors.New("no password given: use --password-stdin, or run in a terminal to be prompted")
	}
	out := cmd.ErrOrStderr() // the prompts: on a terminal, whose failure ReadPassword reports
	_, _ = fmt.Fprint(out, "Password: ")
	first, err := term.ReadPassword(int(f.Fd()))
	_, _ = fmt.Fprintln(out)
	if err != nil {
		return "", err
	}
	_, _ = fmt.Fprint(out, "Repeat password: ")
	second, err := term.ReadPassword(int(f.Fd()))
	_, _ = fmt.Fprintln(out)
	if err != nil {
		return "", err
	}
	if string(first) != string(second) {
		return "", errors.New("the passwords do not match")
	}
	return string(first), nil
}

package cli_test

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/gardend/gardend/cli"
)

// maxHelpWidth is the widest a line of any command's help may be: it must read in a
// terminal or a narrow pane without wrapping mid-word.
const maxHelpWidth = 100

// TestHelpLinesFit renders the help of every command (descriptions, examples, flags)
// and fails on any line wider than maxHelpWidth characters.
func TestHelpLinesFit(t *testing.T) {
	var walk func(c *cobra.Command)
	checked := 0
	walk = func(c *cobra.Command) {
		var out bytes.Buffer
		c.SetOut(&out)
		if err := c.Help(); err != nil {
			t.Fatalf("%s: %v", c.CommandPath(), err)
		}
		checked++
		for i, line := range strings.Split(out.String(), "\n") {
			if n := utf8.RuneCountInString(line); n > maxHelpWidth {
				t.Errorf("%s --help, line %d: %d characters:\n%s", c.CommandPath(), i+1, n, line)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	root := cli.NewRootCommand()
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	walk(root)
	if checked < 20 {
		t.Fatalf("only %d commands' help rendered", checked)
	}
}

// pointclouds sync shares serve's spatial flags, not their help: its --spatial is
// for fetching in process while serve is not running.
func TestPointCloudsSyncHelp(t *testing.T) {
	out, err := run(t, "", "pointclouds", "sync", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, serveOnly := range []string{"endpoints answer 503", "in the background"} {
		if strings.Contains(out, serveOnly) {
			t.Errorf("pointclouds sync --help speaks of serve (%q):\n%s", serveOnly, out)
		}
	}
	if !strings.Contains(out, "gardend serve is not running") {
		t.Errorf("pointclouds sync --help does not say when --spatial is needed:\n%s", out)
	}
}

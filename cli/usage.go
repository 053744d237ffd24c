package cli

import (
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/spf13/cobra"
)

// writeUsage is cobra's default usage text with flag descriptions wrapped to helpWidth
// (TestHelpLinesFit checks every line). It is a function, not a template, on purpose:
// executing a text/template (cobra's SetUsageTemplate, SetVersionTemplate) makes every
// exported method of every linked type reachable through reflection, which turns off
// the linker's dead-code elimination of methods and costs the binary about 3 MiB and
// the idle process about 2 MiB of resident pages (docs/bench/README.md).
func writeUsage(c *cobra.Command) error {
	var b strings.Builder
	b.WriteString("Usage:")
	if c.Runnable() {
		fmt.Fprintf(&b, "\n  %s", c.UseLine())
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\n  %s [command]", c.CommandPath())
	}
	if len(c.Aliases) > 0 {
		fmt.Fprintf(&b, "\n\nAliases:\n  %s", c.NameAndAliases())
	}
	if c.HasExample() {
		fmt.Fprintf(&b, "\n\nExamples:\n%s", c.Example)
	}
	if c.HasAvailableSubCommands() {
		writeSubcommands(&b, c)
	}
	if c.HasAvailableLocalFlags() {
		fmt.Fprintf(&b, "\n\nFlags:\n%s", strings.TrimRightFunc(c.LocalFlags().FlagUsagesWrapped(helpWidth), unicode.IsSpace))
	}
	if c.HasAvailableInheritedFlags() {
		fmt.Fprintf(&b, "\n\nGlobal Flags:\n%s", strings.TrimRightFunc(c.InheritedFlags().FlagUsagesWrapped(helpWidth), unicode.IsSpace))
	}
	if c.HasHelpSubCommands() {
		b.WriteString("\n\nAdditional help topics:")
		for _, sub := range c.Commands() {
			if sub.IsAdditionalHelpTopicCommand() {
				fmt.Fprintf(&b, "\n  %-*s %s", sub.CommandPathPadding(), sub.CommandPath(), sub.Short)
			}
		}
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\n\nUse \"%s [command] --help\" for more information about a command.", c.CommandPath())
	}
	b.WriteString("\n")
	_, err := io.WriteString(c.OutOrStderr(), b.String())
	return err
}

// writeSubcommands lists c's subcommands, by group when it has groups.
func writeSubcommands(b *strings.Builder, c *cobra.Command) {
	listed := func(sub *cobra.Command) bool { return sub.IsAvailableCommand() || sub.Name() == "help" }
	line := func(sub *cobra.Command) { fmt.Fprintf(b, "\n  %-*s %s", sub.NamePadding(), sub.Name(), sub.Short) }
	if len(c.Groups()) == 0 {
		b.WriteString("\n\nAvailable Commands:")
		for _, sub := range c.Commands() {
			if listed(sub) {
				line(sub)
			}
		}
		return
	}
	for _, group := range c.Groups() {
		fmt.Fprintf(b, "\n\n%s", group.Title)
		for _, sub := range c.Commands() {
			if sub.GroupID == group.ID && listed(sub) {
				line(sub)
			}
		}
	}
	if !c.AllChildCommandsHaveGroup() {
		b.WriteString("\n\nAdditional Commands:")
		for _, sub := range c.Commands() {
			if sub.GroupID == "" && listed(sub) {
				line(sub)
			}
		}
	}
}

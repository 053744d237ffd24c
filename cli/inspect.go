package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gardend/gardend/store"
)

type inspectOptions struct {
	global *globalOptions
	json   bool
}

// inspectView is one `gardend inspect <name>`: an admin operation and a table printer.
// Every string from the database goes through printable: names are user input.
type inspectView struct {
	name, short string
	op          string
	newResult   func() any
	table       func(tw io.Writer, v any)
}

func inspectViews() []inspectView {
	return []inspectView{
		{name: "users", short: "List user accounts", op: "inspect.users",
			newResult: func() any { return &[]store.User{} },
			table: func(tw io.Writer, v any) {
				fmt.Fprintln(tw, "ID\tUSERNAME\tNAME\tEMAIL\tSITE ADMIN\tJOINED\tLAST LOGIN")
				for _, u := range *v.(*[]store.User) {
					last := "never"
					if u.LastLogin != nil {
						last = stamp(*u.LastLogin)
					}
					fmt.Fprintf(tw, "%d\t%s\t%s %s\t%s\t%v\t%s\t%s\n", u.ID, printable(u.Username), printable(u.FirstName), printable(u.LastName), printable(u.Email), u.SiteAdmin, stamp(u.DateJoined), last)
				}
			}},
		{name: "tokens", short: "List login tokens (digest prefixes only)", op: "inspect.tokens",
			newResult: func() any { return &[]store.Token{} },
			table: func(tw io.Writer, v any) {
				fmt.Fprintln(tw, "DIGEST\tUSER\tCREATED\tEXPIRES")
				for _, t := range *v.(*[]store.Token) {
					fmt.Fprintf(tw, "%s…\t%d\t%s\t%s\n", printable(t.Prefix), t.UserID, stamp(t.Created), stamp(t.Expiry))
				}
			}},
		{name: "companies", short: "List companies", op: "inspect.companies",
			newResult: func() any { return &[]store.Company{} },
			table: func(tw io.Writer, v any) {
				fmt.Fprintln(tw, "ID\tNAME")
				for _, c := range *v.(*[]store.Company) {
					fmt.Fprintf(tw, "%d\t%s\n", c.ID, printable(c.Name))
				}
			}},
		{name: "gardens", short: "List gardens of every company", op: "inspect.gardens",
			newResult: func() any { return &[]store.Garden{} },
			table: func(tw io.Writer, v any) {
				fmt.Fprintln(tw, "ID\tCOMPANY\tNAME\tIMAGE")
				for _, g := range *v.(*[]store.Garden) {
					image := "-"
					if g.ImagePath != nil {
						image = *g.ImagePath
					}
					fmt.Fprintf(tw, "%d\t%d\t%s\t%s\n", g.ID, g.Company, printable(g.Name), printable(image))
				}
			}},
		{name: "permissions", short: "List company and garden permissions", op: "inspect.permissions",
			newResult: func() any { return &store.PermissionList{} },
			table: func(tw io.Writer, v any) {
				list := v.(*store.PermissionList)
				fmt.Fprintln(tw, "ON\tID\tUSER\tPERMISSION")
				for _, p := range list.Company {
					fmt.Fprintf(tw, "company %d\t%d\t%s\t%s\n", p.Company, p.ID, printable(p.Username), printable(string(p.Level)))
				}
				for _, p := range list.Garden {
					fmt.Fprintf(tw, "garden %d\t%d\t%s\t%s\n", p.Garden, p.ID, printable(p.Username), printable(string(p.Level)))
				}
			}},
		{name: "stats", short: "Show database size and record counts", op: "inspect.stats",
			newResult: func() any { return &store.Stats{} },
			table: func(tw io.Writer, v any) {
				st := v.(*store.Stats)
				fmt.Fprintf(tw, "schema version\t%d\n", st.SchemaVersion)
				fmt.Fprintf(tw, "file size\t%s bytes\n", strconv.FormatInt(st.FileBytes, 10))
				for _, b := range st.Buckets {
					fmt.Fprintf(tw, "%s\t%d\n", printable(b.Name), b.Keys)
				}
			}},
		{name: "beds", short: "List beds with their plant positions and queued downloads", op: "inspect.beds",
			newResult: func() any { return &[]store.BedStatus{} },
			table: func(tw io.Writer, v any) {
				fmt.Fprintln(tw, "ID\tGARDEN\tPROJECT\tNAME\tPOSITIONS\tNO POSITION\tQUEUED\tFAILED")
				for _, b := range *v.(*[]store.BedStatus) {
					fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%d\t%d\t%d\t%d\n", b.ID, b.Garden, printable(b.UUID), printable(b.Name), b.Positions, b.NoPosition, b.Queued, b.Failed)
				}
			}},
		{name: "queue", short: "List queued point-cloud downloads (failed ones included)", op: "inspect.queue",
			newResult: func() any { return &[]store.CloudJob{} },
			table: func(tw io.Writer, v any) {
				fmt.Fprintln(tw, "PROJECT\tCLOUD\tSTATE\tATTEMPTS\tNEXT ATTEMPT\tLAST ERROR")
				for _, j := range *v.(*[]store.CloudJob) {
					state, next := "waiting", stamp(j.NextAttempt)
					if j.Failed {
						state, next = "failed", "-"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", printable(j.Project), printable(j.Cloud), state, j.Attempts, next, printable(j.LastError))
				}
			}},
	}
}

func newInspectCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "inspect",
		Short: "Show stored data (works while serve is running)",
	}
	for _, view := range inspectViews() {
		o := &inspectOptions{global: g}
		sub := &cobra.Command{
			Use:   view.name,
			Short: view.short,
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return o.run(cmd, view)
			},
		}
		sub.Flags().BoolVar(&o.json, "json", false, "print JSON instead of a table")
		cmd.AddCommand(sub)
	}
	return cmd
}

func (o *inspectOptions) run(cmd *cobra.Command, view inspectView) error {
	if err := requireDatabase(o.global); err != nil {
		return err
	}
	res := view.newResult()
	if err := callAdmin(cmd.Context(), o.global, view.op, struct{}{}, res); err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if o.json {
		data, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return err
		}
		_, err = out.Write(append(jsonForTerminal(data), '\n'))
		return err
	}
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	view.table(tw, res)
	return tw.Flush()
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

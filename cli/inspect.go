package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gardend/gardend/server"
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
	// fetch runs the operation; table prints its answer into a tabwriter, which
	// buffers it: its Flush returns a failed write.
	fetch func(ctx context.Context, g *globalOptions) (any, error)
	table func(tw io.Writer, v any)
}

// inspection binds an operation to the table of its answer's type.
func inspection[Resp any](name, short string, op server.AdminOp[Resp], table func(tw io.Writer, v Resp)) inspectView {
	return inspectView{name: name, short: short,
		fetch: func(ctx context.Context, g *globalOptions) (any, error) { return adminCall(ctx, g, op) },
		table: func(tw io.Writer, v any) { table(tw, v.(Resp)) },
	}
}

func inspectViews() []inspectView {
	return []inspectView{
		inspection("users", "List user accounts", server.InspectUsers{}, func(tw io.Writer, users []store.User) {
			_, _ = fmt.Fprintln(tw, "ID\tUSERNAME\tNAME\tEMAIL\tSITE ADMIN\tJOINED\tLAST LOGIN")
			for _, u := range users {
				last := "never"
				if u.LastLogin != nil {
					last = stamp(*u.LastLogin)
				}
				_, _ = fmt.Fprintf(tw, "%d\t%s\t%s %s\t%s\t%v\t%s\t%s\n", u.ID, printable(u.Username), printable(u.FirstName), printable(u.LastName), printable(u.Email), u.SiteAdmin, stamp(u.DateJoined), last)
			}
		}),
		inspection("tokens", "List login tokens (digest prefixes only)", server.InspectTokens{}, func(tw io.Writer, tokens []store.Token) {
			_, _ = fmt.Fprintln(tw, "DIGEST\tUSER\tCREATED\tEXPIRES")
			for _, t := range tokens {
				_, _ = fmt.Fprintf(tw, "%s…\t%d\t%s\t%s\n", printable(t.Prefix), t.UserID, stamp(t.Created), stamp(t.Expiry))
			}
		}),
		inspection("companies", "List companies", server.InspectCompanies{}, func(tw io.Writer, companies []store.Company) {
			_, _ = fmt.Fprintln(tw, "ID\tNAME")
			for _, c := range companies {
				_, _ = fmt.Fprintf(tw, "%d\t%s\n", c.ID, printable(c.Name))
			}
		}),
		inspection("gardens", "List gardens of every company", server.InspectGardens{}, func(tw io.Writer, gardens []store.Garden) {
			_, _ = fmt.Fprintln(tw, "ID\tCOMPANY\tNAME\tIMAGE")
			for _, g := range gardens {
				image := "-"
				if g.ImagePath != nil {
					image = *g.ImagePath
				}
				_, _ = fmt.Fprintf(tw, "%d\t%d\t%s\t%s\n", g.ID, g.Company, printable(g.Name), printable(image))
			}
		}),
		inspection("permissions", "List company and garden permissions", server.InspectPermissions{}, func(tw io.Writer, list store.PermissionList) {
			_, _ = fmt.Fprintln(tw, "ON\tID\tUSER\tPERMISSION")
			for _, p := range list.Company {
				_, _ = fmt.Fprintf(tw, "company %d\t%d\t%s\t%s\n", p.Company, p.ID, printable(p.Username), printable(string(p.Level)))
			}
			for _, p := range list.Garden {
				_, _ = fmt.Fprintf(tw, "garden %d\t%d\t%s\t%s\n", p.Garden, p.ID, printable(p.Username), printable(string(p.Level)))
			}
		}),
		inspection("stats", "Show database size and record counts", server.InspectStats{}, func(tw io.Writer, st store.Stats) {
			_, _ = fmt.Fprintf(tw, "schema version\t%d\n", st.SchemaVersion)
			_, _ = fmt.Fprintf(tw, "file size\t%s bytes\n", strconv.FormatInt(st.FileBytes, 10))
			for _, b := range st.Buckets {
				_, _ = fmt.Fprintf(tw, "%s\t%d\n", printable(b.Name), b.Keys)
			}
		}),
		inspection("beds", "List beds with their plant positions and queued downloads", server.InspectBeds{}, func(tw io.Writer, beds []store.BedStatus) {
			_, _ = fmt.Fprintln(tw, "ID\tGARDEN\tPROJECT\tNAME\tPOSITIONS\tNO POSITION\tQUEUED\tFAILED")
			for _, b := range beds {
				_, _ = fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%d\t%d\t%d\t%d\n", b.ID, b.Garden, printable(b.UUID), printable(b.Name), b.Positions, b.NoPosition, b.Queued, b.Failed)
			}
		}),
		inspection("queue", "List queued point-cloud downloads (failed ones included)", server.InspectQueue{}, func(tw io.Writer, jobs []store.CloudJob) {
			_, _ = fmt.Fprintln(tw, "PROJECT\tCLOUD\tSTATE\tATTEMPTS\tNEXT ATTEMPT\tLAST ERROR")
			for _, j := range jobs {
				state, next := "waiting", stamp(j.NextAttempt)
				if j.Failed {
					state, next = "failed", "-"
				}
				_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", printable(j.Project), printable(j.Cloud), state, j.Attempts, next, printable(j.LastError))
			}
		}),
		inspection("logs", "List the logbook: every garden's logs, newest first (10,000 per garden)", server.InspectLogs{}, logsTable),
		inspection("photos", "List the photos of logs, with their content paths", server.InspectPhotos{}, photosTable),
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
	res, err := view.fetch(cmd.Context(), o.global)
	if err != nil {
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

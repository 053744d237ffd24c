package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/server/sitesync"
	"github.com/gardend/gardend/store"
)

// syncOptions are serve's flags of the sync between sites (docs/sync.md).
type syncOptions struct {
	uplink, creds, ca, hub string
	maxBytes, siteMaxBytes byteSize
}

func (o *syncOptions) addFlags(f *pflag.FlagSet) {
	o.maxBytes = sitesync.DefaultMaxBytes
	f.StringVar(&o.uplink, "sync-uplink", "", "field box: the office hub's leaf-node address, nats-leaf://HOST:7422 or tls://HOST:7422 (default: no sync, no NATS server)")
	f.StringVar(&o.creds, "sync-creds", "", "field box: the site's credentials file from gardend site add")
	f.StringVar(&o.ca, "sync-ca", "", "field box: PEM file of CAs that sign the hub's certificate (tls://)")
	f.Var(&o.maxBytes, "sync-max-bytes", "field box: most bytes of changes and pictures kept for the office while the uplink is down (e.g. 1GiB); past it the box serves on and sends what changed once the office catches up")
	f.StringVar(&o.hub, "sync-hub", "", "office node: the hub's client address, nats://HOST:4222 (needs --store postgres://…)")
	o.siteMaxBytes = sitesync.DefaultSiteMaxBytes
	f.Var(&o.siteMaxBytes, "sync-site-max-bytes", "office node: most bytes the hub keeps of each site's changes, and as many of its pictures (e.g. 2GiB); a site past it stalls only itself")
	markConfig(f, "sync-uplink", "sync-creds", "sync-ca", "sync-max-bytes", "sync-hub", "sync-site-max-bytes")
}

func (o *syncOptions) validate() error {
	if o.uplink != "" {
		if _, err := sitesync.ParseUplink(o.uplink); err != nil {
			return err
		}
	}
	if (o.creds != "" || o.ca != "") && o.uplink == "" {
		return errors.New("--sync-creds and --sync-ca go with --sync-uplink")
	}
	if o.maxBytes < 1<<20 {
		return fmt.Errorf("--sync-max-bytes %d: give at least 1MiB", o.maxBytes)
	}
	if o.siteMaxBytes < 1<<20 {
		return fmt.Errorf("--sync-site-max-bytes %d: give at least 1MiB", o.siteMaxBytes)
	}
	return nil
}

func (o *syncOptions) apply(cfg *server.Config) {
	cfg.SyncUplink, cfg.SyncCreds, cfg.SyncCA, cfg.SyncHub = o.uplink, o.creds, o.ca, o.hub
	cfg.SyncMaxBytes, cfg.SyncSiteMaxBytes = int64(o.maxBytes), int64(o.siteMaxBytes)
}

// officeStore is the office's database: its register of sites and its secrets.
type officeStore interface {
	store.Backend
	store.SiteStore
	Secret(name string, size int) ([]byte, error)
}

// openOffice opens the office's PostgreSQL database for a site or sync command.
func openOffice(ctx context.Context, g *globalOptions) (officeStore, error) {
	if _, pg := g.postgresDSN(); !pg {
		return nil, errors.New("this runs at the office, on its PostgreSQL database: give --store postgres://… (or GARDEND_STORE)")
	}
	st, _, err := openStore(ctx, g, nil, nil)
	if err != nil {
		return nil, err
	}
	o, ok := st.(officeStore)
	if !ok {
		_ = st.Close() // the type is the error
		return nil, errors.New("this store keeps no register of sites")
	}
	return o, nil
}

func newSiteCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "site",
		Short: "Register the field boxes that sync with this office (docs/sync.md)",
	}
	var out string
	add := &cobra.Command{
		Use:   "add NAME",
		Short: "Register a field box and write its credentials file",
		Long: `Register a field box as a site of this office: it gets the next free site number
(2-8191; the office is 1) and a credentials file, NAME.creds in the current
directory or --out FILE, that holds everything the box needs to know about itself
(its number and name, its NATS credentials). Give the file to the box's gardend serve
--sync-creds. The hub accepts it at once, without a restart.`,
		Example: `  gardend site add farm-a --store postgres://gardend@db/gardend`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			name := args[0]
			if err := store.ValidateSiteName(name); err != nil {
				return err
			}
			file := out
			if file == "" {
				file = name + ".creds"
			}
			st, err := openOffice(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer closeInto(&err, "the database", st.Close)
			// Made before the site is registered: a file that cannot be written leaves
			// no site behind it.
			f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("%s exists: remove it or choose another with --out", file)
			}
			if err != nil {
				return err
			}
			site, creds, err := sitesync.AddSite(st, name)
			if err == nil {
				_, err = f.Write(creds)
			}
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				_ = os.Remove(file) // incomplete; the error says why
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "site %s is number %d; its credentials are in %s (keep them secret)\n",
				printable(site.Name), site.Number, printable(file))
			return err
		},
	}
	add.Flags().StringVar(&out, "out", "", "write the credentials here (default: NAME.creds in the current directory)")
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the sites: name, number, last contact, backlog",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			st, err := openOffice(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer closeInto(&err, "the database", st.Close)
			status, err := sitesync.StoreStatus(st)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), status.Sites)
			}
			return printSites(cmd.OutOrStdout(), status.Sites)
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	remove := &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove a site: its credentials stop working, its replicas stay read-only",
		Long: `Remove a site: its credentials are revoked at the hub (by a running office node,
within seconds) and the office applies nothing more from it. What the office holds of
it stays, read-only, until an admin deletes its companies.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			st, err := openOffice(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer closeInto(&err, "the database", st.Close)
			site, err := st.RemoveSite(args[0])
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "site %s (number %d) removed\n", printable(site.Name), site.Number)
			return err
		},
	}
	cmd.AddCommand(add, list, remove)
	return cmd
}

func printSites(w io.Writer, sites []sitesync.SiteInfo) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "NAME\tNUMBER\tLAST CONTACT\tBACKLOG\tAPPLIED\tSTATE")
	for _, s := range sites {
		state := "active"
		if s.Removed {
			state = "removed"
		}
		_, _ = fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%s\n", printable(s.Name), s.Number, when(s.LastContact),
			backlog(s.BacklogRecords, s.BacklogBytes), s.Applied, state)
	}
	return tw.Flush()
}

func when(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return stamp(*t)
}

func backlog(records, bytes int64) string {
	return strconv.FormatInt(records, 10) + " changes, " + strconv.FormatInt(bytes, 10) + " bytes"
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func newSyncCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sync",
		Short: "The sync between field boxes and the office (docs/sync.md)",
	}
	var hub sitesync.HubOptions
	hubConfig := &cobra.Command{
		Use:   "hub-config",
		Short: "Print the hub's complete nats-server configuration",
		Long: `Print a complete nats-server configuration for the office's hub: JetStream (domain
"hub"), the client and leaf-node listeners, and NATS's own JWT authentication with the
operator and account keys kept in the office's database (running this again gives the
same keys; a site added later needs no restart of the hub). Start the hub with
nats-server -c hub.conf.`,
		Example: `  gardend sync hub-config --store postgres://gardend@db/gardend \
    --leaf-advertise hub.example.org:7422 > /etc/nats/hub.conf`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			st, err := openOffice(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer closeInto(&err, "the database", st.Close)
			keys, err := sitesync.LoadKeys(st.Secret)
			if err != nil {
				return err
			}
			sites, err := st.Sites()
			if err != nil {
				return err
			}
			conf, err := sitesync.HubConfig(keys, hub, sitesync.RevocationsOf(sites))
			if err != nil {
				return err
			}
			_, err = io.WriteString(cmd.OutOrStdout(), conf)
			return err
		},
	}
	f := hubConfig.Flags()
	f.StringVar(&hub.ClientListen, "client-listen", "0.0.0.0:4222", "HOST:PORT office nodes connect to (gardend serve --sync-hub)")
	f.StringVar(&hub.LeafListen, "leaf-listen", "0.0.0.0:7422", "HOST:PORT field boxes connect to (their --sync-uplink)")
	f.StringVar(&hub.LeafAdvertise, "leaf-advertise", "", "HOST:PORT boxes are told to reach the hub at; no other address is ever advertised to a box (default: none)")
	f.StringVar(&hub.StoreDir, "store-dir", "/var/lib/nats/jetstream", "the hub's JetStream directory")
	f.StringVar(&hub.ResolverDir, "resolver-dir", "/var/lib/nats/jwt", "the hub's directory of account JWTs")
	f.StringVar(&hub.LeafTLSCert, "leaf-tls-cert", "", "PEM certificate of the leaf-node listener (boxes then use tls:// and --sync-ca)")
	f.StringVar(&hub.LeafTLSKey, "leaf-tls-key", "", "PEM key of --leaf-tls-cert")
	f.StringVar(&hub.ServerName, "server-name", "gardend-hub", "the hub's server name")
	var asJSON bool
	status := &cobra.Command{
		Use:   "status",
		Short: "Show the sync: connected, last contact, backlog, sites",
		Long: `Show the sync of this site as the running server sees it (through the admin
socket; without a running server, what the database says): connected to the hub or
not, the last contact with the other side, the backlog of changes not yet
acknowledged (records and bytes) and the oldest of them, and the sites whose
replicas it holds. The same numbers are Prometheus metrics gardend_sync_*.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := adminCall(cmd.Context(), g, server.SyncStatus{})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), st)
			}
			return printStatus(cmd.OutOrStdout(), st)
		},
	}
	status.Flags().BoolVar(&asJSON, "json", false, "print JSON (keys connected, last_contact, backlog_records, backlog_bytes, oldest_unsent, sites)")
	cmd.AddCommand(hubConfig, status)
	return cmd
}

func printStatus(w io.Writer, st sitesync.Status) error {
	name := printable(st.Name)
	if name == "" {
		name = "(not syncing)"
	}
	if !st.Live {
		if _, err := fmt.Fprintln(w, "no sync runs here (no server, or one without --sync-uplink or --sync-hub): the database's figures"); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "site: %s (number %d, %s)\nconnected: %v\nlast contact: %s\nbacklog: %s\noldest unsent: %s\n",
		name, st.Site, st.Role, st.Connected, when(st.LastContact), backlog(st.BacklogRecords, st.BacklogBytes), when(st.OldestUnsent))
	if err != nil {
		return err
	}
	if st.OverLimit {
		if _, err := fmt.Fprintf(w, "over --sync-max-bytes (%d): queueing paused until the office catches up\n", st.MaxBytes); err != nil {
			return err
		}
	}
	if len(st.Sites) == 0 {
		return nil
	}
	if _, err := fmt.Fprintln(w); err != nil {
		return err
	}
	return printSites(w, st.Sites)
}

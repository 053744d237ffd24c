package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/server/tiles"
	"github.com/gardend/gardend/store"
)

type serveOptions struct {
	global          *globalOptions
	addr            string
	tokenTTL        time.Duration
	logFormat       string
	logLevel        string
	corsOrigins     []string
	maxBody         int64
	maxImage        int64
	maxImagePixels  int64
	tilesMaxBytes   byteSize
	tileWorkers     int
	trustProxy      bool
	shutdownTimeout time.Duration
	demo            bool
	demoLatency     time.Duration
	metricsAddr     string
	compatLineGap   time.Duration
	compat          string
	maxBeds         int
	spatialProjects string
	spatial         spatialOptions
	field           fieldOptions
	logbook         logbookOptions
	sync            syncOptions
	history         historyOptions
}

func newServeCommand(g *globalOptions) *cobra.Command {
	o := &serveOptions{global: g}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the HTTP API",
		Long: `Run the HTTP API on --addr until SIGINT or SIGTERM, then finish in-flight requests
(bounded by --shutdown-timeout) and close the database. While it runs, the other
commands reach the database through a Unix socket in the data directory.`,
		Example: `  gardend serve --demo
  gardend serve --demo --demo-latency 30ms
  gardend serve --addr 0.0.0.0:8000 --data /var/lib/gardend --spatial seerep.farm:9090 \
    --log-format json`,
		Args: cobra.NoArgs,
		RunE: o.run,
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", server.DefaultAddr, "listen address (host:port; port 0 picks a free one)")
	f.DurationVar(&o.tokenTTL, "token-ttl", server.DefaultTokenTTL, "lifetime of login tokens")
	f.StringVar(&o.logFormat, "log-format", "", "log format: json or console (default: console on a terminal, else json)")
	f.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	f.StringSliceVar(&o.corsOrigins, "cors-origins", nil, "other browser origins allowed to call the API, comma-separated scheme://host[:port] (e.g. the original Vue client's), or * for any (default: same-origin only)")
	f.Int64Var(&o.maxBody, "max-body", server.DefaultMaxBodyBytes, "maximum JSON request body in bytes")
	f.Int64Var(&o.maxImage, "max-image", server.DefaultMaxImageBytes, "maximum image upload body in bytes")
	f.Int64Var(&o.maxImagePixels, "max-image-pixels", server.DefaultMaxImagePixels, "most pixels an uploaded picture may have (400 beyond, from its header)")
	f.Var(&o.tilesMaxBytes, "tiles-max-bytes", "most bytes of picture tiles kept under tiles/ (e.g. 2GiB); the least recently served pictures' are deleted beyond it and built again when asked for (0: no limit)")
	f.IntVar(&o.tileWorkers, "tile-workers", 1, "pictures tiled at once in the background (each takes a core)")
	f.BoolVar(&o.trustProxy, "trust-proxy", false, "trust X-Forwarded-Proto/Host (URLs) and X-Forwarded-For (client address) from a reverse proxy")
	f.DurationVar(&o.shutdownTimeout, "shutdown-timeout", server.DefaultShutdownTimeout, "how long to wait for in-flight requests on shutdown")
	f.BoolVar(&o.demo, "demo", false, "run a demo spatial server in-process, seed a demo account, company, garden and beds, and print the credentials")
	f.DurationVar(&o.demoLatency, "demo-latency", 0, "latency added to every call of the demo spatial server (e.g. 30ms, as a real one)")
	f.StringVar(&o.metricsAddr, "metrics-addr", "", "serve Prometheus metrics (GET /metrics) on this address of its own, e.g. 127.0.0.1:9464 (default: only on the admin socket)")
	f.DurationVar(&o.compatLineGap, "compat-line-gap", 0, "pause between beds-stream lines (old PlantMap client; not safe)")
	f.StringVar(&o.compat, "compat", "", "plantmap: answer as the original server did (docs/migrating.md)")
	f.StringVar(&o.spatialProjects, "spatial-projects", server.SpatialProjectsGardenAdmins, "who may list every project of the spatial server to register beds: garden-admins, or site-admins when tenants share one spatial server")
	f.IntVar(&o.maxBeds, "max-beds-per-garden", server.DefaultMaxBedsPerGarden, "most beds POST …/beds lets one garden have (400 beyond; gardens with more keep them; 0: no limit)")
	o.spatial.addFlags(f)
	o.field.addFlags(f)
	o.logbook.addFlags(f)
	o.sync.addFlags(f)
	o.history.addFlags(f)
	markConfig(f) // every serve flag is configuration (config.go)
	return cmd
}

func (o *serveOptions) run(cmd *cobra.Command, _ []string) (err error) {
	log, err := newLogger(cmd.ErrOrStderr(), o.logFormat, o.logLevel)
	if err != nil {
		return err
	}
	if err := o.field.validate(); err != nil {
		return err
	}
	if err := o.spatial.validate(); err != nil {
		return err
	}
	if err := o.logbook.validate(); err != nil {
		return err
	}
	if err := o.sync.validate(); err != nil {
		return err
	}
	if err := o.history.validate(); err != nil {
		return err
	}
	if err := server.CheckCompatLineGap(o.compatLineGap); err != nil {
		return err
	}
	if err := server.CheckCompat(o.compat); err != nil {
		return err
	}
	if err := server.CheckSpatialProjects(o.spatialProjects); err != nil {
		return err
	}
	if o.maxImagePixels <= 0 {
		return fmt.Errorf("--max-image-pixels %d: must be at least 1", o.maxImagePixels)
	}
	if o.tileWorkers <= 0 {
		return errors.New("--tile-workers must be at least 1")
	}
	if o.maxBeds < 0 {
		return fmt.Errorf("--max-beds-per-garden %d: use 0 (no limit) or more", o.maxBeds)
	}
	cfg := server.Config{
		DataDir:          o.global.dataDir,
		Addr:             o.addr,
		TokenTTL:         o.tokenTTL,
		CORSOrigins:      o.corsOrigins,
		MaxBodyBytes:     o.maxBody,
		MaxImageBytes:    o.maxImage,
		MaxImagePixels:   o.maxImagePixels,
		Tiles:            tiles.Config{MaxBytes: int64(o.tilesMaxBytes), Workers: o.tileWorkers},
		TrustProxy:       o.trustProxy,
		ShutdownTimeout:  o.shutdownTimeout,
		AdminSocket:      true,
		Demo:             o.demo,
		DemoLatency:      o.demoLatency,
		CompatLineGap:    o.compatLineGap,
		CompatPlantMap:   o.compat == server.CompatPlantMap,
		Spatial:          o.spatial.clientConfig(),
		Clouds:           o.spatial.cloudConfig(),
		Logger:           log,
		Build:            buildInfo(),
		MetricsAddr:      o.metricsAddr,
		MaxBedsPerGarden: noLimitIfZero(o.maxBeds),
		SpatialProjects:  o.spatialProjects,
	}
	o.field.apply(&cfg)
	o.logbook.apply(&cfg)
	o.sync.apply(&cfg)
	o.history.apply(&cfg)
	limit, source, setLimit, err := memoryLimit(o.field.memoryLimit, cfg.MaxHashing)
	if err != nil {
		return err
	}
	if setLimit {
		defer server.SetMemoryLimit(limit)()
	}
	cfg.HashingProcs = true
	log.Info().Int("max_hashing", cfg.MaxHashing).Int64("hashing_budget_mib", server.HashingMemory(store.DefaultArgon2, cfg.MaxHashing)>>20).
		Int64("memory_limit_mib", debug.SetMemoryLimit(-1)>>20).Str("memory_limit_from", source).Msg("memory")
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := o.openStore(ctx, &cfg, log); err != nil {
		if ctx.Err() != nil && cmd.Context().Err() == nil {
			log.Info().Msg("stopped while waiting for the database")
			return nil
		}
		return err
	}
	srv, err := server.New(cfg) // closes the store on failure
	if err != nil {
		if cfg.Listener != nil {
			_ = cfg.Listener.Close()
		}
		return err
	}
	defer closeInto(&err, "the server's store", srv.Close)
	if o.demo {
		go func() {
			select {
			case <-srv.Ready():
				// For the person at the terminal; nothing to do if it is gone.
				_, _ = fmt.Fprintf(cmd.OutOrStdout(), "gardend demo on http://%s — log in as %q with password %q\n",
					srv.Addr(), server.DemoUsername, server.DemoPassword)
				_, _ = fmt.Fprintf(cmd.OutOrStdout(), "web app: http://%s/ (the demo garden: http://%s/#/c%s)\n",
					srv.Addr(), srv.Addr(), appGardenPath(srv.DemoGardenPath()))
				_, _ = fmt.Fprintf(cmd.OutOrStdout(), "demo garden: http://%s%s (beds: GET %s/beds)\n",
					srv.Addr(), srv.DemoGardenPath(), srv.DemoGardenPath())
			case <-ctx.Done():
			}
		}()
	}
	notified := make(chan struct{})
	go func() {
		defer close(notified)
		notifySystemd(ctx, srv, log)
	}()
	err = srv.Run(ctx)
	stop() // Run may end on its own; STOPPING=1 goes out either way
	<-notified
	return err
}

// openStore opens the database into cfg. A shared database that is down is waited
// for (server.AwaitStore): the node listens at once and answers not ready until it
// can open it, then serves on the same listener.
func (o *serveOptions) openStore(ctx context.Context, cfg *server.Config, log zerolog.Logger) error {
	var err error
	if _, pg := o.global.postgresDSN(); !pg {
		cfg.Store, cfg.StoreCreated, err = openStore(ctx, o.global, nil, &log)
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	cfg.Store, cfg.StoreCreated, err = server.AwaitStore(ctx, *cfg, ln, func(ctx context.Context) (store.Backend, bool, error) {
		return openStore(ctx, o.global, nil, &log)
	})
	if err != nil {
		_ = ln.Close()
		return err
	}
	cfg.Listener = ln
	return nil
}

// appGardenPath turns the API path /companies/C/gardens/G into the web app's
// /C/g/G view ("" when there is no demo garden).
func appGardenPath(api string) string {
	rest, ok := strings.CutPrefix(api, "/companies/")
	if !ok {
		return ""
	}
	return "/" + strings.Replace(rest, "/gardens/", "/g/", 1)
}

// noLimitIfZero maps a flag's "0: no limit" to Config's negative value (where 0 takes
// the default).
func noLimitIfZero(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

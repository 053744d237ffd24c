package cli

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/gardend/gardend/server"
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
	trustProxy      bool
	shutdownTimeout time.Duration
	demo            bool
	demoLatency     time.Duration
	spatial         spatialOptions
	field           fieldOptions
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
  gardend serve --addr 0.0.0.0:8000 --data /var/lib/gardend --spatial seerep.farm:9090 --log-format json`,
		Args: cobra.NoArgs,
		RunE: o.run,
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", server.DefaultAddr, "listen address (host:port; port 0 picks a free one)")
	f.DurationVar(&o.tokenTTL, "token-ttl", server.DefaultTokenTTL, "lifetime of login tokens")
	f.StringVar(&o.logFormat, "log-format", "", "log format: json or console (default: console on a terminal, else json)")
	f.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	f.StringSliceVar(&o.corsOrigins, "cors-origins", []string{"*"}, "browser origins allowed by CORS (comma-separated; * for any)")
	f.Int64Var(&o.maxBody, "max-body", server.DefaultMaxBodyBytes, "maximum JSON request body in bytes")
	f.Int64Var(&o.maxImage, "max-image", server.DefaultMaxImageBytes, "maximum image upload body in bytes")
	f.BoolVar(&o.trustProxy, "trust-proxy", false, "trust X-Forwarded-Proto/Host (URLs) and X-Forwarded-For (client address) from a reverse proxy")
	f.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 15*time.Second, "how long to wait for in-flight requests on shutdown")
	f.BoolVar(&o.demo, "demo", false, "run a demo spatial server in-process, seed a demo account, company, garden and beds, and print the credentials")
	f.DurationVar(&o.demoLatency, "demo-latency", 0, "latency added to every call of the demo spatial server (e.g. 30ms, as a real one)")
	o.spatial.addFlags(f)
	o.field.addFlags(f)
	return cmd
}

func (o *serveOptions) run(cmd *cobra.Command, _ []string) error {
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
	cfg := server.Config{
		DataDir:         o.global.dataDir,
		Addr:            o.addr,
		TokenTTL:        o.tokenTTL,
		CORSOrigins:     o.corsOrigins,
		MaxBodyBytes:    o.maxBody,
		MaxImageBytes:   o.maxImage,
		TrustProxy:      o.trustProxy,
		ShutdownTimeout: o.shutdownTimeout,
		AdminSocket:     true,
		Demo:            o.demo,
		DemoLatency:     o.demoLatency,
		Spatial:         o.spatial.clientConfig(),
		Clouds:          o.spatial.cloudConfig(),
		Logger:          log,
	}
	o.field.apply(&cfg)
	limit, source, setLimit, err := memoryLimit(o.field.memoryLimit, cfg.MaxHashing)
	if err != nil {
		return err
	}
	if setLimit {
		defer server.SetMemoryLimit(limit)()
	}
	defer server.ReserveHashingProcs(cfg.MaxHashing)()
	log.Info().Int("max_hashing", cfg.MaxHashing).Int64("hashing_budget_mib", server.HashingMemory(store.DefaultArgon2, cfg.MaxHashing)>>20).
		Int64("memory_limit_mib", debug.SetMemoryLimit(-1)>>20).Str("memory_limit_from", source).Msg("memory")
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}
	defer srv.Close()
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.demo {
		go func() {
			select {
			case <-srv.Ready():
				fmt.Fprintf(cmd.OutOrStdout(), "gardend demo on http://%s — log in as %q with password %q\n",
					srv.Addr(), server.DemoUsername, server.DemoPassword)
				fmt.Fprintf(cmd.OutOrStdout(), "demo garden: http://%s%s (beds: GET %s/beds)\n",
					srv.Addr(), srv.DemoGardenPath(), srv.DemoGardenPath())
			case <-ctx.Done():
			}
		}()
	}
	return srv.Run(ctx)
}

// newLogger writes JSON lines, or human-friendly lines when asked or on a terminal.
func newLogger(w io.Writer, format, level string) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(strings.ToLower(level))
	if err != nil || level == "" {
		return zerolog.Logger{}, fmt.Errorf("--log-level %q: use debug, info, warn or error", level)
	}
	switch format {
	case "":
		if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			format = "console"
		} else {
			format = "json"
		}
	case "json", "console":
	default:
		return zerolog.Logger{}, fmt.Errorf("--log-format %q: use json or console", format)
	}
	if format == "console" {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly}
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger(), nil
}

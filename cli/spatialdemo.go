package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gardend/gardend/spatial/demo"
)

type spatialDemoOptions struct {
	addr     string
	latency  time.Duration
	failRate float64
	seed     int64
	beds     int
	plants   int
	scan     time.Duration
}

func newSpatialDemoCommand() *cobra.Command {
	o := &spatialDemoOptions{}
	cmd := &cobra.Command{
		Use:   "spatial-demo",
		Short: "Run the demo spatial data server standalone (until SIGINT)",
		Long: `Serve a generated, deterministic garden over the spatial data server's gRPC
protocol, as a stand-in for a SEEREP instance: point gardend serve --spatial at it and
register the printed project uuids as beds. The same --seed, --beds and --plants give
the same uuids every time.`,
		Example: `  gardend spatial-demo --addr 127.0.0.1:50051 --latency 30ms
  gardend serve --spatial 127.0.0.1:50051`,
		Args: cobra.NoArgs,
		RunE: o.run,
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", "127.0.0.1:50051", "listen address (host:port)")
	f.DurationVar(&o.latency, "latency", 0, "latency added to every call")
	f.Float64Var(&o.failRate, "fail-rate", 0, "fraction of calls answered Unavailable (0..1)")
	f.Int64Var(&o.seed, "seed", 1, "seed of the generated garden and of the failures")
	f.IntVar(&o.beds, "beds", demo.DefaultBeds, "number of beds (projects)")
	f.IntVar(&o.plants, "plants", demo.DefaultPlants, "plants per bed")
	f.DurationVar(&o.scan, "demo-scan-interval", demo.DefaultScanInterval, "how often the simulated robot scans the garden, updating every plant's measurement in place (0: never, the generated values stay)")
	return cmd
}

func (o *spatialDemoOptions) run(cmd *cobra.Command, _ []string) error {
	switch {
	case o.failRate < 0 || o.failRate > 1:
		return errors.New("--fail-rate must be between 0 and 1")
	case o.beds <= 0 || o.plants <= 0:
		return errors.New("--beds and --plants must be at least 1")
	case o.latency < 0:
		return errors.New("--latency must not be negative")
	case o.scan < 0:
		return errors.New("--demo-scan-interval must not be negative")
	}
	ds := demo.Generate(demo.Options{Seed: o.seed, Beds: o.beds, Plants: o.plants})
	srv := demo.NewServer(ds, demo.ServerOptions{Latency: o.latency, FailRate: o.failRate, Seed: o.seed})
	addr, err := srv.Start(o.addr)
	if err != nil {
		return fmt.Errorf("--addr %s: %w", o.addr, err)
	}
	defer srv.Stop()
	out := cmd.OutOrStdout() // for the person at the terminal; nothing to do if it is gone
	_, _ = fmt.Fprintf(out, "demo spatial server on %s (%d beds of %d plants, latency %v, fail rate %g)\n", addr, o.beds, o.plants, o.latency, o.failRate)
	_, _ = fmt.Fprintln(out, "bed project uuids (gardend beds add --garden G --uuid U --name N):")
	for _, b := range ds.Beds {
		_, _ = fmt.Fprintf(out, "%s\t%s\n", b.ProjectUUID, b.Name)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.scan > 0 {
		sim := demo.NewSimulation(ds)
		robot := make(chan struct{})
		rctx, cancel := context.WithCancel(ctx)
		go func() {
			defer close(robot)
			srv.RunRobot(rctx, sim, o.scan, time.Now)
		}()
		defer func() { cancel(); <-robot }()
		if _, err := fmt.Fprintf(out, "a simulated robot scans the garden every %v\n", o.scan); err != nil {
			return err
		}
	}
	<-ctx.Done()
	st := srv.Stats()
	total := int64(0)
	for _, n := range st.Calls {
		total += n
	}
	_, _ = fmt.Fprintf(out, "stopping after %d calls (at most %d at once)\n", total, st.MaxInFlight)
	return nil
}

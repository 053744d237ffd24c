package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/server/pointcloud"
)

func newPointCloudsCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pointclouds",
		Short: "Manage the point clouds kept for plant positions",
	}
	cmd.AddCommand(newPointCloudsSyncCommand(g))
	return cmd
}

type pointCloudsSyncOptions struct {
	global  *globalOptions
	garden  uint64
	spatial spatialOptions
}

func newPointCloudsSyncCommand(g *globalOptions) *cobra.Command {
	o := &pointCloudsSyncOptions{global: g}
	cmd := &cobra.Command{
		Use:   "sync",
		Short: "Fetch every missing point cloud now (all gardens, or one)",
		Long: `Fetch the point cloud of every plant whose position is not known yet, instead of
waiting for requests to queue them, with a progress bar on standard error. Downloads
that failed for good are tried again. While gardend serve runs, its workers do the work
and the --spatial flags are not needed; otherwise the clouds are fetched in process
from the server --spatial names. A cloud that fails stays queued for the background
workers.`,
		Example: `  gardend pointclouds sync
  gardend pointclouds sync --garden 3 --spatial seerep.farm:9090`,
		Args: cobra.NoArgs,
		RunE: o.run,
	}
	f := cmd.Flags()
	f.Uint64Var(&o.garden, "garden", 0, "only this garden's beds (default: all gardens)")
	o.spatial.addFlags(f)
	// The shared flags' help speaks of serve; here they serve the in-process fetch.
	f.Lookup("spatial").Usage = "spatial data server (SEEREP) gRPC address HOST:PORT to fetch from " +
		"in process when gardend serve is not running (while it runs, its workers fetch and this is not needed)"
	f.Lookup("pointcloud-workers").Usage = "point clouds downloaded at once when fetching in process"
	return cmd
}

func (o *pointCloudsSyncOptions) run(cmd *cobra.Command, _ []string) error {
	if err := requireDatabase(o.global); err != nil {
		return err
	}
	if err := o.spatial.validate(); err != nil {
		return err
	}
	// The progress bar and the spatial client's log lines (from many goroutines)
	// share it.
	errOut := zerolog.SyncWriter(cmd.ErrOrStderr())
	prepare := func(a *server.Admin) (func(), error) {
		if o.spatial.addr == "" {
			return nil, fmt.Errorf("gardend serve is not running on %s: pass --spatial HOST:PORT to fetch the clouds in process", o.global.dataDir)
		}
		log := zerolog.New(errOut).Level(zerolog.WarnLevel).With().Timestamp().Logger()
		return a.UseSpatial(o.global.dataDir, o.spatial.clientConfig(), o.spatial.cloudConfig(), log)
	}
	bar := newProgressBar(errOut, isTerminal(cmd.ErrOrStderr()))
	var last pointcloud.Progress
	err := adminStream(cmd.Context(), o.global, server.PointCloudsSync{Garden: o.garden}, prepare, func(p pointcloud.Progress) error {
		if p.Error != "" && !p.Final {
			bar.note("warning: " + printable(p.Error))
			return nil
		}
		last = p
		bar.draw(p)
		return nil
	})
	bar.finish()
	if err != nil {
		return err
	}
	if !last.Final {
		return errors.New("the sync ended without its final report")
	}
	if last.Error != "" {
		return errors.New(printable(last.Error))
	}
	out := cmd.OutOrStdout() // the summary of a sync already done: printing it cannot undo it
	switch {
	case last.Total > 0:
		_, _ = fmt.Fprintf(out, "%d of %d point clouds fetched, %d failed (they stay queued), %s\n",
			last.Done-last.Failed, last.Total, last.Failed, mib(last.Bytes))
	case last.BedsFailed == 0:
		_, _ = fmt.Fprintln(out, "no point cloud is missing")
	}
	if last.BedsFailed > 0 {
		// A bed that could not be read may be missing any number of clouds: the
		// sync did not do what was asked, and scripts must see that.
		return fmt.Errorf("%d of %d beds could not be read from the spatial server (see the warnings above); their point clouds were not synced", last.BedsFailed, last.Beds)
	}
	return nil
}

// progressBar draws `[#####     ] 120/198 clouds  4.1 MiB`: redrawn in place on a
// terminal, else a line per tenth of the way so logs stay short.
// Its writes are discarded on failure: a progress display has nothing to report to.
type progressBar struct {
	w        io.Writer
	tty      bool
	drawn    bool
	lastTier int
}

func newProgressBar(w io.Writer, tty bool) *progressBar {
	return &progressBar{w: w, tty: tty, lastTier: -1}
}

const barWidth = 30

func (b *progressBar) draw(p pointcloud.Progress) {
	if p.Total == 0 {
		return // nothing to download: a full bar of 0/0 would read as success
	}
	filled := p.Done * barWidth / p.Total
	text := fmt.Sprintf("[%s%s] %d/%d clouds  %s", strings.Repeat("#", filled), strings.Repeat(" ", barWidth-filled), p.Done, p.Total, mib(p.Bytes))
	if b.tty {
		_, _ = fmt.Fprint(b.w, "\r"+text+"\x1b[K")
		b.drawn = true
		return
	}
	tier := filled * 10 / barWidth
	if tier != b.lastTier || p.Final {
		b.lastTier = tier
		_, _ = fmt.Fprintln(b.w, text)
	}
}

// note prints a message on its own line, without breaking the bar.
func (b *progressBar) note(msg string) {
	if b.drawn {
		_, _ = fmt.Fprintln(b.w)
		b.drawn = false
	}
	_, _ = fmt.Fprintln(b.w, msg)
}

func (b *progressBar) finish() {
	if b.drawn {
		_, _ = fmt.Fprintln(b.w)
		b.drawn = false
	}
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

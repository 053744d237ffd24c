package pointcloud

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"time"

	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/cloud"
	"github.com/gardend/gardend/store"
)

// fetch makes one attempt at a claimed job: the cloud from its PLY file when one was
// kept (a job queued again for a changed transform needs no download), else from the
// spatial server, kept as PLY; then the position, stored with the removal of the job
// in one transaction. It logs one line per cloud.
func (p *Pool) fetch(ctx context.Context, j store.CloudJob) Event {
	start := time.Now()
	ev := Event{Project: j.Project, Cloud: j.Cloud}
	log := p.log.With().Str("project", j.Project).Str("cloud", j.Cloud).Logger()
	path, err := p.files.Path(j.Project, j.Cloud)
	if err != nil {
		ev.Err = err
		p.failed(j, err)
		return ev
	}
	// The cloud is in memory from here until the position is computed.
	release, err := p.holdCloud(ctx)
	if err != nil {
		ev.Err = err
		return ev
	}
	pc, size, source, err := p.load(ctx, path, j)
	if err != nil {
		release()
		ev.Err = err
		if ctx.Err() == nil {
			p.failed(j, err)
		}
		return ev
	}
	ev.Bytes = size
	pos := store.PlantPosition{Project: j.Project, Cloud: j.Cloud, CloudInputs: j.CloudInputs, Points: int(pc.Width) * int(pc.Height)}
	ll, err := spatial.PlantPosition(pc, j.Frame, j.Transform, spatial.LatLon(j.Origin))
	if err != nil {
		// The cloud yields no position with these inputs; that is an outcome, kept so
		// the cloud is not fetched again until the inputs change.
		pos.Reason = err.Error()
	} else {
		pos.Position = &store.LatLon{Lat: ll.Lat, Lon: ll.Lon}
	}
	release()
	if err := p.store.CompleteCloudJob(pos); err != nil {
		ev.Err = err
		if errors.Is(err, store.ErrNotFound) {
			// The bed went while the cloud was on its way: so does the file.
			_ = os.Remove(path) // unreferenced: the sweep removes a leftover
			log.Info().Msg("point cloud dropped: no bed refers to its project any more")
			return ev
		}
		p.failed(j, err)
		return ev
	}
	line := log.Info().Str("source", source).Int("points", pos.Points).Int64("bytes", size).Float64("duration_ms", durationMS(time.Since(start)))
	if pos.Position != nil {
		line.Float64("lat", pos.Position.Lat).Float64("lon", pos.Position.Lon).Msg("plant position computed")
	} else {
		line.Str("reason", pos.Reason).Msg("point cloud yields no plant position")
	}
	return ev
}

// load returns the job's cloud: from its kept PLY file, else downloaded and kept.
// Failing to keep it is logged, not fatal: the position does not need the file.
func (p *Pool) load(ctx context.Context, path string, j store.CloudJob) (pc cloud.PointCloud, size int64, source string, err error) {
	pc, size, err = p.files.read(path)
	switch {
	case err == nil:
		p.files.budget.touch(path)
		return pc, size, "file", nil
	case !errors.Is(err, fs.ErrNotExist):
		p.log.Warn().Err(err).Str("path", path).Msg("kept point cloud unreadable; downloading it again")
	}
	pc, err = p.source.PointCloud(ctx, j.Project, j.Cloud)
	if err != nil {
		return cloud.PointCloud{}, 0, "", err
	}
	size, err = p.files.write(path, pc)
	if err != nil {
		p.log.Error().Err(err).Str("path", path).Msg("keep point cloud as PLY")
	}
	return pc, size, "download", nil
}

// failed counts a failed attempt in the queue (which ends the claim) and logs it.
func (p *Pool) failed(j store.CloudJob, cause error) {
	rec, ok, err := p.store.RecordCloudFailure(j.Project, j.Cloud, j.CloudInputs, cause.Error(), p.cfg.Retry)
	log := p.log.Warn().Err(cause).Str("project", j.Project).Str("cloud", j.Cloud)
	switch {
	case err != nil:
		p.log.Error().Err(err).Str("project", j.Project).Str("cloud", j.Cloud).Msg("record a failed download")
	case !ok:
		log.Msg("point cloud download failed; its job was queued again meanwhile")
	case rec.Failed:
		log.Int("attempts", rec.Attempts).Msg("point cloud download failed; giving up until a request re-arms it")
	default:
		log.Int("attempts", rec.Attempts).Time("next_attempt", rec.NextAttempt).Msg("point cloud download failed; will retry")
	}
}

// durationMS is d in milliseconds, as the log's duration fields are.
func durationMS(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

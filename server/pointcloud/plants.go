package pointcloud

import (
	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/store"
)

// Inputs is what p's position is computed from; ok is false when p has no cloud or no
// cloud could give it a position (no transform for its frame, a bad transform or
// origin, or a cloud uuid unfit for a file name): such a cloud is never downloaded.
func Inputs(b spatial.Bed, p spatial.Plant) (store.CloudInputs, bool) {
	c := p.Cloud
	if c == nil {
		return store.CloudInputs{}, false
	}
	if err := spatial.CheckPositionInputs(c.FrameID, c.Transform, b.Origin); err != nil || !store.ValidUUID(c.UUID) {
		return store.CloudInputs{}, false
	}
	return store.CloudInputs{Frame: c.FrameID, Transform: c.Transform, Origin: store.LatLon(b.Origin)}, true
}

// Status is where a plant's point cloud stands (a plant's "pointcloud" field), so a
// client can tell a plant that will appear on the map shortly from one that never
// will.
type Status string

const (
	// Stored: the cloud is kept and the position computed from it (plant_coords,
	// unless the cloud holds no usable point).
	Stored Status = "stored"
	// Downloading: queued or being downloaded; plant_coords follow when it lands.
	Downloading Status = "downloading"
	// Failed: the download ran out of attempts; a later request queues it again.
	Failed Status = "failed"
	// None: no point cloud that could place the plant (none recorded, or no
	// transform for its frame).
	None Status = "none"
)

// Statuses says, per plant of b, where its cloud stands. before is the project's
// cloud state read before coords and jobs were (Pool.Coords): positions are only
// added meanwhile, so a plant with coords is stored, one queued by this request or
// queued before is downloading, and one whose download failed for good stays failed
// unless this request queued it again.
func Statuses(b spatial.Bed, before store.CloudState, coords []*store.LatLon, jobs []store.CloudJob) []Status {
	queued := make(map[string]bool, len(jobs))
	for _, j := range jobs {
		queued[j.Cloud] = true
	}
	out := make([]Status, len(b.Plants))
	for i, p := range b.Plants {
		in, ok := Inputs(b, p)
		switch {
		case coords[i] != nil:
			out[i] = Stored
		case !ok:
			out[i] = None
		case queued[p.Cloud.UUID]:
			out[i] = Downloading
		default:
			if _, fresh := before.Fresh(p.Cloud.UUID, in); fresh {
				out[i] = Stored // computed, but the cloud gives no position
			} else if j, ok := before.Jobs[p.Cloud.UUID]; ok && j.Failed {
				out[i] = Failed
			} else {
				out[i] = Downloading
			}
		}
	}
	return out
}

// Coords reads the stored positions of a bed's plants (one read transaction) and
// returns them by plant index (nil where unknown), with the downloads to queue for
// plants whose position is missing or stale. A stale position (computed from another
// transform, frame or origin than the server reports now) is not served: it is as
// unknown until recomputed, which from the kept PLY file takes milliseconds. Requests
// queue only what NeedsJob allows; force (pointclouds sync) queues every plant
// without a fresh position.
func (p *Pool) Coords(b spatial.Bed, force bool) ([]*store.LatLon, []store.CloudJob, error) {
	state, err := p.store.CloudState(b.ProjectUUID)
	if err != nil {
		return nil, nil, err
	}
	now := p.now()
	coords := make([]*store.LatLon, len(b.Plants))
	var jobs []store.CloudJob
	for i, pl := range b.Plants {
		in, ok := Inputs(b, pl)
		if !ok {
			continue
		}
		if pos, fresh := state.Fresh(pl.Cloud.UUID, in); fresh {
			coords[i] = pos.Position
			continue
		}
		if force || state.NeedsJob(pl.Cloud.UUID, in, now, p.cfg.Rearm) {
			jobs = append(jobs, store.CloudJob{Project: b.ProjectUUID, Cloud: pl.Cloud.UUID, CloudInputs: in})
		}
	}
	return coords, jobs, nil
}

package server

import (
	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/store"
)

// The "pointcloud" field of a plant says where its point cloud stands, so a client can
// tell a plant that will appear on the map shortly from one that never will.
const (
	// cloudStored: the cloud is kept and the position computed from it (plant_coords,
	// unless the cloud holds no usable point).
	cloudStored = "stored"
	// cloudDownloading: queued or being downloaded; plant_coords follow when it lands.
	cloudDownloading = "downloading"
	// cloudFailed: the download ran out of attempts; a later request queues it again.
	cloudFailed = "failed"
	// cloudNone: no point cloud that could place the plant (none recorded, or no
	// transform for its frame).
	cloudNone = "none"
)

// cloudStatuses says, per plant of b, where its cloud stands. before is the project's
// cloud state read before coords and jobs were (plantCoords): positions are only
// added meanwhile, so a plant with coords is stored, one queued by this request or
// queued before is downloading, and one whose download failed for good stays failed
// unless this request queued it again.
func cloudStatuses(b spatial.Bed, before store.CloudState, coords []*store.LatLon, jobs []store.CloudJob) []string {
	queued := make(map[string]bool, len(jobs))
	for _, j := range jobs {
		queued[j.Cloud] = true
	}
	out := make([]string, len(b.Plants))
	for i, p := range b.Plants {
		in, ok := cloudInputsOf(b, p)
		switch {
		case coords[i] != nil:
			out[i] = cloudStored
		case !ok:
			out[i] = cloudNone
		case queued[p.Cloud.UUID]:
			out[i] = cloudDownloading
		default:
			if _, fresh := before.Fresh(p.Cloud.UUID, in); fresh {
				out[i] = cloudStored // computed, but the cloud gives no position
			} else if j, ok := before.Jobs[p.Cloud.UUID]; ok && j.Failed {
				out[i] = cloudFailed
			} else {
				out[i] = cloudDownloading
			}
		}
	}
	return out
}

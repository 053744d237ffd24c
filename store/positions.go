package store

import (
	"time"
)

// Plant positions are computed from point clouds in the background and kept here per
// spatial-server project and cloud, with the inputs they were computed from, so that a
// request reads a bed's positions in one transaction and can tell a stale one.

// LatLon is a WGS84 position in degrees.
type LatLon struct {
	Lat float64 `json:"lat"`
	Lon float64 `json:"lon"`
}

// Transform is the rigid transform from a cloud's frame into its bed's map frame:
// translation and quaternion (x, y, z, w), as the spatial server reports it.
//
// There is one transform type: spatial.Transform is an alias of the same struct type
// literal, which Go makes the same type. A transform thus goes from the spatial
// client into a queued job and back into the position computation without a
// conversion, while neither leaf imports the other. The two declarations must stay
// identical, tags included (server/pointcloud stops compiling otherwise).
type Transform = struct {
	Translation [3]float64 `json:"translation"`
	Rotation    [4]float64 `json:"rotation"`
}

// CloudInputs is what a plant's position depends on besides the cloud itself. The
// server can change any of them (a recalibrated camera, a moved bed origin); a
// position computed from other inputs is stale.
type CloudInputs struct {
	Frame string `json:"frame"`
	// Transform is nil when the cloud is in the map frame and the server has none.
	Transform *Transform `json:"transform,omitempty"`
	Origin    LatLon     `json:"origin"`
}

// Equal compares the inputs exactly: values are stored as received, and JSON keeps
// float64 values bit for bit.
func (a CloudInputs) Equal(b CloudInputs) bool {
	if a.Frame != b.Frame || a.Origin != b.Origin || (a.Transform == nil) != (b.Transform == nil) {
		return false
	}
	return a.Transform == nil || *a.Transform == *b.Transform
}

// PlantPosition is the outcome of computing a plant's position from its point cloud.
type PlantPosition struct {
	Project string `json:"project"`
	Cloud   string `json:"cloud"`
	CloudInputs
	// Position is nil when the cloud yields none (no usable point); Reason says why.
	// Such an outcome is kept too, so the cloud is not fetched again for nothing.
	Position *LatLon `json:"position,omitempty"`
	Reason   string  `json:"reason,omitempty"`
	// Points is the number of points the cloud holds.
	Points   int       `json:"points"`
	Computed time.Time `json:"computed"`
}

// CloudState is what the store knows about a project's clouds: computed positions and
// queued downloads, by cloud uuid.
type CloudState struct {
	Positions map[string]PlantPosition
	Jobs      map[string]CloudJob
}

// Fresh returns the position of cloud computed from exactly these inputs.
func (st CloudState) Fresh(cloud string, in CloudInputs) (PlantPosition, bool) {
	p, ok := st.Positions[cloud]
	if !ok || !p.CloudInputs.Equal(in) {
		return PlantPosition{}, false
	}
	return p, true
}

// NeedsJob reports whether cloud must be (re)queued for these inputs: it has no fresh
// position and is not queued for them, or it failed for good more than rearm ago.
// EnqueueClouds applies the same rule, so callers can skip the write when nothing
// needs it.
func (st CloudState) NeedsJob(cloud string, in CloudInputs, now time.Time, rearm time.Duration) bool {
	if _, ok := st.Fresh(cloud, in); ok {
		return false
	}
	j, ok := st.Jobs[cloud]
	return !ok || !j.CloudInputs.Equal(in) || j.Failed && !now.Before(j.LastAttempt.Add(rearm))
}

// ValidUUID reports whether s can be a spatial-server uuid in a key or a file name:
// 1–64 letters, digits and '-', so it is safe as a path element.
func ValidUUID(s string) bool { return len(s) <= maxUUIDLen && uuidChars(s) }

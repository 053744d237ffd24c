// Package demo is a stand-in spatial data server: a generated, deterministic garden
// (Generate) served over real gRPC (NewServer) with injectable latency and failures,
// and a garden picture to go with it (GardenPNG). Tests use it end to end; its raw data
// is exported so they can compute expected results without the client's code.
package demo

import (
	"time"

	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/cloud"
)

// Geometry types and the target frame, as in spatial-protocol.md.
const (
	TypeMeasurement = "measurement"
	TypePointCloud  = "pointcloud"
	TypeImage       = "image"
	FrameMap        = "map"
)

// Dataset is everything the demo server holds. It may be built by hand as well as by
// Generate; the server reads only the raw fields (not Bed.Plants).
type Dataset struct {
	// Origin is the reference point the beds were laid out from.
	Origin spatial.LatLon
	// Now is the instant the data was "recorded" at; planting dates lie before it.
	Now  time.Time
	Beds []Bed
}

// Bed is one project of the spatial server.
type Bed struct {
	ProjectUUID string
	Name        string
	// Geolocation is the WGS84 origin of the bed's map frame (x east, y north).
	Geolocation spatial.LatLon
	Altitude    float64
	// Size is the bed's extent in metres from its map origin: east, north. Only the
	// picture uses it.
	Size [2]float64
	// Geometries are sent by GetProjectDetails in this order (not sorted).
	Geometries []Geometry
	// Frames is the GetFrames answer.
	Frames []string
	// Transforms maps a child frame to the transform from it into "map". A frame
	// missing here has no transform (GetTransformStamped answers NotFound).
	Transforms map[string]spatial.Transform
	// Measurements maps a measurement geometry uuid to its data. Values are float64,
	// int64, uint64, bool or string (the oneof members); anything else, nil included,
	// is sent as a MeasurementData with no member set.
	Measurements map[string]map[string]any
	Instances    map[string]Instance
	Classes      map[string]Class
	// Clouds maps a pointcloud geometry uuid to its cloud.
	Clouds map[string]Cloud
	// Plants is the generator's own account of the bed's plants, sorted by name; for
	// expected positions. Hand-built datasets may leave it empty.
	Plants []Plant
}

// Geometry is one GeometryInfo of a project.
type Geometry struct {
	Name, UUID, Type, FrameID string
	Stamp                     time.Time
	Labels                    []string
}

// Instance is an InstanceInfos: Name is the species; attribute "planting_date"
// (int64, unix seconds) the planting time.
type Instance struct {
	UUID, Name, ClassUUID string
	Attributes            map[string]any
}

// Class is a ClassInfos: attribute "variety" (string) is the variety.
type Class struct {
	UUID, Name string
	Attributes map[string]any
}

// Cloud is a point cloud as the server sends it.
type Cloud struct {
	FrameID string
	Stamp   time.Time
	cloud.PointCloud
	// Centre is the mean x and y over the points whose x and y are finite, in
	// FrameID coordinates, computed from the encoded values.
	Centre [2]float64
	// Points is the number of points with finite x and y.
	Points int
}

// Plant is what the generator knows about one plant.
type Plant struct {
	Name            string
	MeasurementUUID string
	// InstanceUUID and ClassUUID are the measurement geometry's labels; "" when the
	// geometry lacks the label.
	InstanceUUID, ClassUUID string
	// CloudUUID is the pointcloud geometry's uuid, "" when the plant has no cloud.
	CloudUUID string
	// MapPosition is the cloud's centre in the bed's map frame, R(q̂)·(cx, cy, 0) + t
	// as coordinates.md says; valid when HasPosition (a cloud whose frame has a
	// transform, or is "map").
	MapPosition [2]float64
	HasPosition bool
	// Trouble marks the bed's plant meant to be in trouble: its health levels may
	// exceed 3, the highest the original's client colours, and the simulation
	// (Simulation) gives it a problem to go through. Other plants stay within 0–3.
	Trouble bool
}

// Bed returns the bed with the given project uuid, or nil.
func (d *Dataset) Bed(projectUUID string) *Bed {
	for i := range d.Beds {
		if d.Beds[i].ProjectUUID == projectUUID {
			return &d.Beds[i]
		}
	}
	return nil
}

// ProjectUUIDs lists the beds' project uuids in dataset order.
func (d *Dataset) ProjectUUIDs() []string {
	out := make([]string, len(d.Beds))
	for i, b := range d.Beds {
		out[i] = b.ProjectUUID
	}
	return out
}

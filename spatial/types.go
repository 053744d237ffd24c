// Package spatial talks to the spatial data server (a SEEREP instance) over gRPC and
// turns what it answers into gardend's own types. Generated proto types never leave
// this package.
package spatial

import "time"

// Bed is one bed (one spatial-server project) with its plants, as read from the server.
type Bed struct {
	ProjectUUID string
	Name        string
	// Origin is the WGS84 position of the origin of the bed's "map" frame.
	Origin LatLon
	// Plants are sorted by Name, byte-wise.
	Plants []Plant
}

// Plant is one plant of a bed: a measurement geometry and, when the robot recorded
// one, a point-cloud geometry with the same name.
type Plant struct {
	// Name is the geometry name shared by the plant's measurement and point cloud.
	Name string
	// ID is the uuid of the plant's first measurement geometry (the oldest by stamp).
	// A server may add a measurement geometry per scan under the same name; the
	// server package keeps the id it first reported for a name (store.PlantID).
	ID string
	// Measurement is the uuid of the measurement geometry the values come from: the
	// newest of the plant's measurement geometries by stamp (the first listed of
	// equally new ones). MeasuredAt is its stamp, zero when the server sent none.
	Measurement string
	MeasuredAt  time.Time
	// Species is the name of the plant's instance ("mangold").
	Species string
	// Variety is the class attribute "variety" ("Lucullus").
	Variety string

	// Measured values; nil means the server did not send the value (never zero).
	Humidity    *float64
	Yield       *float64
	GrowthState *float64
	// PlantedAt is the instance attribute planting_date; nil when absent.
	PlantedAt *time.Time
	Health    []Health
	Status    string

	// Cloud is the plant's point-cloud geometry, the newest by stamp when there are
	// several; nil when none was recorded.
	Cloud *CloudRef
}

// Health is one health aspect of a plant: Type is "water", "nutrients", "diseases" or
// any other string the server sends; Level is the level of concern.
type Health struct {
	Type  string
	Level int64
}

// CloudRef names a plant's point cloud on the server and the transform that maps its
// frame into the bed's map frame.
type CloudRef struct {
	UUID    string
	FrameID string
	// Transform maps FrameID coordinates into "map"; nil when the server has none.
	Transform *Transform
}

// Transform is a rigid transform: m = R(Rotation)·p + Translation, with Rotation a
// quaternion (x, y, z, w), not necessarily normalised (CheckTransform, ApplyTransform).
//
// It is store.Transform: both alias this struct type literal, which Go makes one
// type, so the store keeps what the client returns without a conversion and neither
// leaf imports the other. Keep the two declarations identical, tags included.
type Transform = struct {
	Translation [3]float64 `json:"translation"`
	Rotation    [4]float64 `json:"rotation"`
}

// LatLon is a WGS84 position in degrees.
type LatLon struct {
	Lat float64 `json:"lat"`
	Lon float64 `json:"lon"`
}

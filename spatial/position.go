package spatial

import (
	"errors"
	"fmt"
	"math"

	"github.com/gardend/gardend/spatial/cloud"
)

// Errors of PlantPosition besides cloud.ErrNoPoints, cloud.ErrInvalid and
// ErrInvalidTransform; all are wrapped, so test with errors.Is.
var (
	// ErrNoTransform: the cloud is not in the map frame and no transform was given.
	ErrNoTransform = errors.New("no transform from the point cloud's frame to map")
	// ErrInvalidOrigin: the bed's geolocation is not a finite latitude in [−90, 90].
	ErrInvalidOrigin = errors.New("invalid bed origin")
)

// MapFrame is the bed's local frame; a cloud recorded in it needs no transform.
const MapFrame = "map"

// PlantPosition is where a plant stands (shared/spec/coordinates.md): the centroid
// (mean x, mean y, 0) of its cloud, mapped into the bed's map frame by tf, then taken
// from the map frame's tangent plane at origin onto the globe (x east, y north; the
// height that the transform may add is dropped, as the spec says). tf == nil means
// identity, which is only right when frameID is "map" itself.
func PlantPosition(pc cloud.PointCloud, frameID string, tf *Transform, origin LatLon) (LatLon, error) {
	// The cheap checks come before the scan through the cloud.
	if err := CheckPositionInputs(frameID, tf, origin); err != nil {
		return LatLon{}, err
	}
	x, y, _, err := cloud.Centroid(pc)
	if err != nil {
		return LatLon{}, fmt.Errorf("point cloud: %w", err)
	}
	m := [3]float64{x, y, 0}
	if tf != nil {
		m = ApplyTransform(*tf, m)
	}
	return LocalToWGS84(origin, m[0], m[1], 0), nil
}

// CheckPositionInputs is PlantPosition's check of everything but the cloud: with
// these inputs no cloud can yield a position unless it returns nil. Callers use it to
// avoid fetching a cloud for nothing.
func CheckPositionInputs(frameID string, tf *Transform, origin LatLon) error {
	if tf == nil && frameID != MapFrame {
		return fmt.Errorf("frame %q: %w", frameID, ErrNoTransform)
	}
	if tf != nil {
		if err := CheckTransform(*tf); err != nil {
			return fmt.Errorf("transform of frame %q: %w", frameID, err)
		}
	}
	if math.IsNaN(origin.Lat) || math.Abs(origin.Lat) > 90 || math.IsNaN(origin.Lon) || math.IsInf(origin.Lon, 0) {
		return fmt.Errorf("%w: %v", ErrInvalidOrigin, origin)
	}
	return nil
}

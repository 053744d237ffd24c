package cloud

import (
	"errors"
	"fmt"
	"math"
)

// Sentinel errors; the detailed errors wrap them, so test with errors.Is.
var (
	// ErrInvalid is wrapped by every error about a malformed cloud.
	ErrInvalid = errors.New("invalid point cloud")
	// ErrNoPoints means the cloud has no point whose x and y are both finite.
	ErrNoPoints = errors.New("point cloud has no point with finite x and y")
)

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// Validate reports whether pc can be decoded: it has fields x and y, every field has a
// known datatype and fits inside a point, rows hold Width points, and Data holds
// Height rows. It never reads Data and allocates nothing.
func (pc PointCloud) Validate() error {
	if err := pc.checkLayout(); err != nil {
		return err
	}
	_, _, err := pc.xy()
	return err
}

// checkLayout is Validate without the need for x and y: a PLY export works for any
// well-formed cloud.
func (pc PointCloud) checkLayout() error {
	for _, f := range pc.Fields {
		if err := pc.checkField(f); err != nil {
			return err
		}
	}
	return pc.checkGeometry()
}

// checkField reports whether f has a known datatype and fits inside one point.
func (pc PointCloud) checkField(f Field) error {
	if !f.Datatype.Known() {
		return invalidf("field %q has unknown datatype %d", f.Name, uint8(f.Datatype))
	}
	// uint64 cannot overflow here: offset < 2^32 and size·count < 2^36.
	end := uint64(f.Offset) + uint64(f.Datatype.Size())*uint64(f.elems())
	if end > uint64(pc.PointStep) {
		return invalidf("field %q ends at byte %d, beyond point_step %d", f.Name, end, pc.PointStep)
	}
	return nil
}

// checkGeometry reports whether Data holds Height rows of Width points.
func (pc PointCloud) checkGeometry() error {
	if uint64(pc.Width)*uint64(pc.Height) > math.MaxInt32 {
		// Point counts are kept in an int; 2^31 points is far beyond any real message.
		return invalidf("width·height = %d·%d is too large", pc.Width, pc.Height)
	}
	if uint64(pc.RowStep) < uint64(pc.Width)*uint64(pc.PointStep) {
		return invalidf("row_step %d < width %d · point_step %d", pc.RowStep, pc.Width, pc.PointStep)
	}
	if need := uint64(pc.Height) * uint64(pc.RowStep); uint64(len(pc.Data)) < need {
		return invalidf("data has %d bytes, height %d · row_step %d needs %d", len(pc.Data), pc.Height, pc.RowStep, need)
	}
	return nil
}

// xy returns the first fields named x and y.
func (pc PointCloud) xy() (x, y Field, err error) {
	var hasX, hasY bool
	for _, f := range pc.Fields {
		switch {
		case f.Name == "x" && !hasX:
			x, hasX = f, true
		case f.Name == "y" && !hasY:
			y, hasY = f, true
		}
	}
	switch {
	case !hasX:
		return x, y, invalidf("no field named x")
	case !hasY:
		return x, y, invalidf("no field named y")
	}
	return x, y, nil
}

package cloud

import (
	"encoding/binary"
	"math"
)

// Centroid returns the mean x and y over the points whose x and y are both finite, and
// how many points that was (n == 0 gives ErrNoPoints). A field with Count > 1 counts by
// its first element. Only x, y and the cloud's geometry are checked, so an odd extra
// field (say an UNSET datatype for colour) does not cost a plant its position.
func Centroid(pc PointCloud) (x, y float64, n int, err error) {
	fx, fy, err := pc.xy()
	if err != nil {
		return 0, 0, 0, err
	}
	for _, f := range [2]Field{fx, fy} {
		if err := pc.checkField(f); err != nil {
			return 0, 0, 0, err
		}
	}
	if err := pc.checkGeometry(); err != nil {
		return 0, 0, 0, err
	}
	l := layout{
		w: int(pc.Width), h: int(pc.Height), ps: int(pc.PointStep), rs: int(pc.RowStep),
		ox: int(fx.Offset), oy: int(fy.Offset), tx: fx.Datatype, ty: fy.Datatype, big: pc.BigEndian,
	}
	// Summing offsets from the first usable point keeps the mean exact to well under a
	// millimetre even for clouds far from their frame's origin (UTM-like coordinates).
	x0, y0, ok := l.first(pc.Data)
	if !ok {
		return 0, 0, 0, ErrNoPoints
	}
	var s sums
	switch {
	case !l.big && l.tx == Float32 && l.ty == Float32:
		s = l.sumFloat32LE(pc.Data, x0, y0)
	case !l.big && l.tx == Float64 && l.ty == Float64:
		s = l.sumFloat64LE(pc.Data, x0, y0)
	default:
		s = l.sumGeneric(pc.Data, x0, y0)
	}
	x, y = x0+s.x/float64(s.n), y0+s.y/float64(s.n)
	if !finite(x) || !finite(y) {
		// Only float64 values near ±1.8e308 get here; no position can come of them.
		return 0, 0, 0, invalidf("mean of x or y overflows")
	}
	return x, y, s.n, nil
}

// layout is a validated cloud's geometry and its x and y fields, as ints.
type layout struct {
	w, h, ps, rs, ox, oy int
	tx, ty               Datatype
	big                  bool
}

type sums struct {
	x, y float64
	n    int
}

// first returns the first point with finite x and y.
func (l layout) first(data []byte) (x, y float64, ok bool) {
	for r := 0; r < l.h; r++ {
		row := data[r*l.rs : r*l.rs+l.w*l.ps]
		for i := 0; i < len(row); i += l.ps {
			p := row[i : i+l.ps]
			x, y = decode(p[l.ox:], l.tx, l.big), decode(p[l.oy:], l.ty, l.big)
			if finite(x) && finite(y) {
				return x, y, true
			}
		}
	}
	return 0, 0, false
}

// sumGeneric handles every datatype and byte order with a switch per value.
func (l layout) sumGeneric(data []byte, x0, y0 float64) sums {
	var s sums
	for r := 0; r < l.h; r++ {
		row := data[r*l.rs : r*l.rs+l.w*l.ps]
		for i := 0; i < len(row); i += l.ps {
			p := row[i : i+l.ps]
			x, y := decode(p[l.ox:], l.tx, l.big), decode(p[l.oy:], l.ty, l.big)
			if finite(x) && finite(y) {
				s.x += x - x0
				s.y += y - y0
				s.n++
			}
		}
	}
	return s
}

// sumFloat32LE is the common case (ROS clouds on x86 and ARM), specialised so the loop
// has no calls; a float32 is finite unless its exponent bits are all ones.
func (l layout) sumFloat32LE(data []byte, x0, y0 float64) sums {
	const exp = 0x7f800000
	var s sums
	for r := 0; r < l.h; r++ {
		row := data[r*l.rs : r*l.rs+l.w*l.ps]
		for i := 0; i < len(row); i += l.ps {
			p := row[i : i+l.ps]
			bx := binary.LittleEndian.Uint32(p[l.ox:])
			by := binary.LittleEndian.Uint32(p[l.oy:])
			if bx&exp == exp || by&exp == exp {
				continue
			}
			s.x += float64(math.Float32frombits(bx)) - x0
			s.y += float64(math.Float32frombits(by)) - y0
			s.n++
		}
	}
	return s
}

// sumFloat64LE is sumFloat32LE for FLOAT64 coordinates.
func (l layout) sumFloat64LE(data []byte, x0, y0 float64) sums {
	const exp = 0x7ff0000000000000
	var s sums
	for r := 0; r < l.h; r++ {
		row := data[r*l.rs : r*l.rs+l.w*l.ps]
		for i := 0; i < len(row); i += l.ps {
			p := row[i : i+l.ps]
			bx := binary.LittleEndian.Uint64(p[l.ox:])
			by := binary.LittleEndian.Uint64(p[l.oy:])
			if bx&exp == exp || by&exp == exp {
				continue
			}
			s.x += math.Float64frombits(bx) - x0
			s.y += math.Float64frombits(by) - y0
			s.n++
		}
	}
	return s
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// decode reads one element of type t from the start of b; b is long enough (checked
// by checkField). Plain branches instead of a binary.ByteOrder keep interface calls
// out of the per-point loop.
func decode(b []byte, t Datatype, big bool) float64 {
	switch t {
	case Int8:
		return float64(int8(b[0]))
	case Uint8:
		return float64(b[0])
	case Int16:
		return float64(int16(u16(b, big)))
	case Uint16:
		return float64(u16(b, big))
	case Int32:
		return float64(int32(u32(b, big)))
	case Uint32:
		return float64(u32(b, big))
	case Float32:
		return float64(math.Float32frombits(u32(b, big)))
	case Float64:
		return math.Float64frombits(u64(b, big))
	}
	return math.NaN()
}

func u16(b []byte, big bool) uint16 {
	if big {
		return binary.BigEndian.Uint16(b)
	}
	return binary.LittleEndian.Uint16(b)
}

func u32(b []byte, big bool) uint32 {
	if big {
		return binary.BigEndian.Uint32(b)
	}
	return binary.LittleEndian.Uint32(b)
}

func u64(b []byte, big bool) uint64 {
	if big {
		return binary.BigEndian.Uint64(b)
	}
	return binary.LittleEndian.Uint64(b)
}

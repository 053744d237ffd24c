package cloud

import (
	"encoding/binary"
	"math"
)

// put writes v as one element of type t at the start of b (tests only).
func put(b []byte, t Datatype, big bool, v float64) {
	var o binary.ByteOrder = binary.LittleEndian
	if big {
		o = binary.BigEndian
	}
	switch t {
	case Int8:
		b[0] = byte(int8(v))
	case Uint8:
		b[0] = uint8(v)
	case Int16:
		o.PutUint16(b, uint16(int16(v)))
	case Uint16:
		o.PutUint16(b, uint16(v))
	case Int32:
		o.PutUint32(b, uint32(int32(v)))
	case Uint32:
		o.PutUint32(b, uint32(v))
	case Float32:
		o.PutUint32(b, math.Float32bits(float32(v)))
	case Float64:
		o.PutUint64(b, math.Float64bits(v))
	}
}

// build lays out points row by row: pts[i] holds the values of every element of every
// field, in field order. Padding bytes (inside points and after rows) are 0xff, which
// reads as NaN in any float, so a decoder that strays into padding is caught.
func build(fields []Field, pointStep, width, height, rowStep uint32, big bool, pts [][]float64) PointCloud {
	data := make([]byte, int(height)*int(rowStep))
	for i := range data {
		data[i] = 0xff
	}
	for i, vals := range pts {
		r, c := uint32(i)/width, uint32(i)%width
		p := data[r*rowStep+c*pointStep:]
		k := 0
		for _, f := range fields {
			for e := uint32(0); e < f.elems(); e++ {
				put(p[f.Offset+e*f.Datatype.Size():], f.Datatype, big, vals[k])
				k++
			}
		}
	}
	return PointCloud{Width: width, Height: height, PointStep: pointStep, RowStep: rowStep,
		Fields: fields, BigEndian: big, Data: data}
}

// packed builds a one-row cloud with fields laid out back to back.
func packed(names []string, t Datatype, big bool, pts [][]float64) PointCloud {
	fields := make([]Field, len(names))
	for i, n := range names {
		fields[i] = Field{Name: n, Offset: uint32(i) * t.Size(), Datatype: t, Count: 1}
	}
	ps := uint32(len(names)) * t.Size()
	w := uint32(len(pts))
	return build(fields, ps, w, 1, w*ps, big, pts)
}

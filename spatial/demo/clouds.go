package demo

import (
	"encoding/binary"
	"math"

	"github.com/gardend/gardend/spatial/cloud"
)

// cloudLayout is one way of packing points; each has padding inside the point so a
// reader that assumes packed points fails.
type cloudLayout struct {
	fields    []cloud.Field
	pointStep uint32
	bigEndian bool
	rows      uint32 // > 1: an organised cloud
	rowPad    uint32 // bytes after each row
}

var (
	// PCL's PointXYZRGB: x y z, 4 bytes of padding, rgb packed into a float, 12 more.
	layoutF32 = cloudLayout{fields: []cloud.Field{
		{Name: "x", Offset: 0, Datatype: cloud.Float32, Count: 1},
		{Name: "y", Offset: 4, Datatype: cloud.Float32, Count: 1},
		{Name: "z", Offset: 8, Datatype: cloud.Float32, Count: 1},
		{Name: "rgb", Offset: 16, Datatype: cloud.Float32, Count: 1},
	}, pointStep: 32}
	layoutF64 = cloudLayout{fields: []cloud.Field{
		{Name: "x", Offset: 0, Datatype: cloud.Float64, Count: 1},
		{Name: "y", Offset: 8, Datatype: cloud.Float64, Count: 1},
		{Name: "z", Offset: 16, Datatype: cloud.Float64, Count: 1},
		{Name: "rgb", Offset: 24, Datatype: cloud.Uint32, Count: 1},
	}, pointStep: 32}
	layoutBE = cloudLayout{fields: []cloud.Field{
		{Name: "x", Offset: 0, Datatype: cloud.Float32, Count: 1},
		{Name: "y", Offset: 4, Datatype: cloud.Float32, Count: 1},
		{Name: "z", Offset: 8, Datatype: cloud.Float32, Count: 1},
		{Name: "rgb", Offset: 12, Datatype: cloud.Uint32, Count: 1},
	}, pointStep: 20, bigEndian: true}
	layoutOrganised = cloudLayout{fields: layoutF32.fields, pointStep: 32, rows: 4, rowPad: 16}
)

const padByte = 0xA5 // padding is not zero, so reading it by mistake shows

// cloud draws a plant's cloud: a few hundred to a few thousand points around centre
// (in frame coordinates), some clouds with NaN points. Bed 0 has one of each special
// layout at plants 2, 3 and 4.
func (g *gen) cloud(b, i int, frame string, centre vec3) Cloud {
	l := layoutF32
	switch {
	case b == 0 && i == 1:
		l = layoutBE
	case b == 0 && i == 2:
		l = layoutF64
	case b == 0 && i == 3:
		l = layoutOrganised
	default:
		switch x := g.r.Float64(); {
		case x < 0.2:
			l = layoutF64
		case x < 0.3:
			l = layoutBE
		case x < 0.35:
			l = layoutOrganised
		}
	}
	rows := max(l.rows, 1)
	width := uint32(300+g.r.IntN(2700)) / rows
	rowStep := width*l.pointStep + l.rowPad
	data := make([]byte, rows*rowStep)
	for k := range data {
		data[k] = padByte
	}
	var order binary.ByteOrder = binary.LittleEndian
	if l.bigEndian {
		order = binary.BigEndian
	}
	nanRate := 0.0
	if g.chance(0.3) {
		nanRate = 0.01
	}
	var sx, sy float64
	n := 0
	for r := uint32(0); r < rows; r++ {
		for c := uint32(0); c < width; c++ {
			p := data[r*rowStep+c*l.pointStep:]
			v := vec3{
				centre[0] + 0.05*g.r.NormFloat64(),
				centre[1] + 0.05*g.r.NormFloat64(),
				centre[2] + g.uniform(0, 0.4),
			}
			if nanRate > 0 && g.chance(nanRate) { // no draw at all for clouds without NaNs
				v[g.r.IntN(2)] = math.NaN()
			}
			// Leafy colours: little red and blue, a lot of green; one draw for all three.
			bits := g.r.Uint32()
			r, gr, bl := (bits>>16&0xff)%80, 120+(bits>>8&0xff)%120, (bits&0xff)%60
			rgb := r<<16 | gr<<8 | bl
			var stored [3]float64
			for k, f := range l.fields[:3] {
				stored[k] = put(order, p[f.Offset:], f.Datatype, v[k])
			}
			order.PutUint32(p[l.fields[3].Offset:], rgb)
			if !math.IsNaN(stored[0]) && !math.IsNaN(stored[1]) {
				sx += stored[0]
				sy += stored[1]
				n++
			}
		}
	}
	c := Cloud{
		FrameID: frame,
		PointCloud: cloud.PointCloud{
			Width: width, Height: rows, PointStep: l.pointStep, RowStep: rowStep,
			Fields: append([]cloud.Field(nil), l.fields...), BigEndian: l.bigEndian, Data: data,
		},
		Points: n,
	}
	if n > 0 {
		c.Centre = [2]float64{sx / float64(n), sy / float64(n)}
	}
	return c
}

// put encodes v as datatype dt and returns the value as stored (float32 rounds).
func put(order binary.ByteOrder, p []byte, dt cloud.Datatype, v float64) float64 {
	if dt == cloud.Float64 {
		order.PutUint64(p, math.Float64bits(v))
		return v
	}
	f := float32(v)
	order.PutUint32(p, math.Float32bits(f))
	return float64(f)
}

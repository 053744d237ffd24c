package cloud

// A point cloud seen in 3D, as a viewer shows it: the points whose x, y and z are all
// finite (a NaN point is a pixel without depth, not a place), and their mean.

// xyzLayout is a validated cloud's geometry and its x, y and z fields.
type xyzLayout struct {
	w, h, ps, rs int
	off          [3]int
	typ          [3]Datatype
	big          bool
}

func (pc PointCloud) xyzLayout() (xyzLayout, error) {
	fx, fy, err := pc.xy()
	if err != nil {
		return xyzLayout{}, err
	}
	var fz Field
	found := false
	for _, f := range pc.Fields {
		if f.Name == "z" {
			fz, found = f, true
			break
		}
	}
	if !found {
		return xyzLayout{}, invalidf("no field named z")
	}
	for _, f := range [3]Field{fx, fy, fz} {
		if err := pc.checkField(f); err != nil {
			return xyzLayout{}, err
		}
	}
	if err := pc.checkGeometry(); err != nil {
		return xyzLayout{}, err
	}
	return xyzLayout{
		w: int(pc.Width), h: int(pc.Height), ps: int(pc.PointStep), rs: int(pc.RowStep),
		off: [3]int{int(fx.Offset), int(fy.Offset), int(fz.Offset)},
		typ: [3]Datatype{fx.Datatype, fy.Datatype, fz.Datatype}, big: pc.BigEndian,
	}, nil
}

// each calls fn with every point's bytes and its coordinates, when all three are finite.
func (l xyzLayout) each(data []byte, fn func(p []byte, v [3]float64)) {
	for r := 0; r < l.h; r++ {
		row := data[r*l.rs : r*l.rs+l.w*l.ps]
		for i := 0; i < len(row); i += l.ps {
			p := row[i : i+l.ps]
			var v [3]float64
			ok := true
			for k := range v {
				v[k] = decode(p[l.off[k]:], l.typ[k], l.big)
				ok = ok && finite(v[k])
			}
			if ok {
				fn(p, v)
			}
		}
	}
}

// MeanXYZ returns the mean of x, y and z over the points whose three coordinates are
// all finite, and how many points that was (none gives ErrNoPoints). The cloud needs
// fields x, y and z; a field with Count > 1 counts by its first element.
func MeanXYZ(pc PointCloud) (mean [3]float64, n int, err error) {
	l, err := pc.xyzLayout()
	if err != nil {
		return mean, 0, err
	}
	// Offsets from the first point keep the sum exact for clouds far from their
	// frame's origin, as in Centroid.
	var first, sum [3]float64
	l.each(pc.Data, func(_ []byte, v [3]float64) {
		if n == 0 {
			first = v
		}
		for k := range v {
			sum[k] += v[k] - first[k]
		}
		n++
	})
	if n == 0 {
		return mean, 0, ErrNoPoints
	}
	for k := range mean {
		mean[k] = first[k] + sum[k]/float64(n)
		if !finite(mean[k]) {
			return [3]float64{}, 0, invalidf("mean of the coordinates overflows")
		}
	}
	return mean, n, nil
}

// FinitePoints returns pc without the points whose x, y or z is not finite, as one
// packed row with the same fields and byte order. A cloud without such points comes
// back as it is.
func FinitePoints(pc PointCloud) (PointCloud, error) {
	l, err := pc.xyzLayout()
	if err != nil {
		return PointCloud{}, err
	}
	n := 0
	l.each(pc.Data, func([]byte, [3]float64) { n++ })
	if n == l.w*l.h {
		return pc, nil
	}
	data := make([]byte, 0, n*l.ps)
	l.each(pc.Data, func(p []byte, _ [3]float64) { data = append(data, p...) })
	out := pc
	out.Width, out.Height, out.RowStep, out.Data = uint32(n), 1, uint32(n*l.ps), data
	return out, nil
}

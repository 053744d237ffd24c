package pyramid

import "image"

// Mean4 is the pixel of the next level down: the mean of the given pixels (RGBA,
// not premultiplied; one, two or four of them, 4 bytes each), colours weighted by
// alpha so that transparent pixels lend none, everything rounded to nearest.
// It is exported for tests that check a pyramid against their own.
func Mean4(px ...[]byte) [4]byte {
	var r, g, b, a int
	for _, p := range px {
		w := int(p[3])
		r, g, b, a = r+int(p[0])*w, g+int(p[1])*w, b+int(p[2])*w, a+w
	}
	if a == 0 {
		return [4]byte{}
	}
	n := len(px)
	return [4]byte{byte((r + a/2) / a), byte((g + a/2) / a), byte((b + a/2) / a), byte((a + n/2) / n)}
}

// halveRows writes into dst the row of the next level down made of rows a and b (b
// nil when a is a level's last row and has no pair) of width w.
func halveRows(dst, a, b []byte, w int) {
	for i := range (w + 1) / 2 {
		x := 2 * i
		o := dst[4*i : 4*i+4 : 4*i+4]
		if x+1 < w && b != nil {
			p, q, r, s := a[4*x:4*x+8:4*x+8], b[4*x:4*x+8:4*x+8], a[4*x+4:4*x+8], b[4*x+4:4*x+8]
			if p[3]&q[3]&r[3]&s[3] == 0xff {
				// Opaque: the plain mean, which the weighted one equals.
				o[0] = byte((int(p[0]) + int(q[0]) + int(r[0]) + int(s[0]) + 2) / 4)
				o[1] = byte((int(p[1]) + int(q[1]) + int(r[1]) + int(s[1]) + 2) / 4)
				o[2] = byte((int(p[2]) + int(q[2]) + int(r[2]) + int(s[2]) + 2) / 4)
				o[3] = 0xff
				continue
			}
			m := Mean4(p[:4], r, q[:4], s)
			copy(o, m[:])
			continue
		}
		var m [4]byte
		switch {
		case x+1 < w:
			m = Mean4(a[4*x:4*x+4], a[4*x+4:4*x+8])
		case b != nil:
			m = Mean4(a[4*x:4*x+4], b[4*x:4*x+4])
		default:
			m = Mean4(a[4*x : 4*x+4])
		}
		copy(o, m[:])
	}
}

// resize scales src down to w × h by area: each output pixel is the mean of the
// source area it covers (fractions of pixels at its edges), weighted by alpha as
// Mean4 is. It makes the thumbnail, from a level at most twice its size.
func resize(src *image.NRGBA, w, h int) *image.NRGBA {
	sw, sh := src.Rect.Dx(), src.Rect.Dy()
	if sw == w && sh == h {
		return src
	}
	xs, ys := weights(sw, w), weights(sh, h)
	// Horizontal pass into premultiplied sums (r·a, g·a, b·a, a) per row.
	tmp := make([]float32, 4*w*sh)
	for y := range sh {
		row := src.Pix[y*src.Stride:]
		for x, ws := range xs {
			var r, g, b, a float32
			for _, t := range ws {
				p := row[4*t.i : 4*t.i+4 : 4*t.i+4]
				wa := t.w * float32(p[3])
				r, g, b, a = r+wa*float32(p[0]), g+wa*float32(p[1]), b+wa*float32(p[2]), a+wa
			}
			o := tmp[4*(y*w+x):]
			o[0], o[1], o[2], o[3] = r, g, b, a
		}
	}
	dst := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y, ws := range ys {
		for x := range w {
			var r, g, b, a float32
			for _, t := range ws {
				p := tmp[4*(t.i*w+x):]
				r, g, b, a = r+t.w*p[0], g+t.w*p[1], b+t.w*p[2], a+t.w*p[3]
			}
			o := dst.Pix[y*dst.Stride+4*x:]
			if a > 0 {
				o[0], o[1], o[2] = roundByte(r/a), roundByte(g/a), roundByte(b/a)
				o[3] = roundByte(a) // the weights of an output pixel sum to 1 in each pass
			}
		}
	}
	return dst
}

type tap struct {
	i int
	w float32
}

// weights lists, for each of n output pixels along a side of m source pixels, the
// source pixels it covers and how much of each (summing to 1).
func weights(m, n int) [][]tap {
	out := make([][]tap, n)
	scale := float64(m) / float64(n)
	for j := range n {
		lo, hi := float64(j)*scale, float64(j+1)*scale
		for i := int(lo); i < m && float64(i) < hi; i++ {
			cover := min(hi, float64(i+1)) - max(lo, float64(i))
			if cover > 0 {
				out[j] = append(out[j], tap{i, float32(cover / scale)})
			}
		}
	}
	return out
}

func roundByte(v float32) byte {
	switch {
	case v <= 0:
		return 0
	case v >= 255:
		return 255
	}
	return byte(v + 0.5)
}

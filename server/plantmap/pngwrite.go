package plantmap

import (
	"bufio"
	"compress/zlib"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"io"
)

// A JPEG becomes an 8-bit RGB PNG written row by row from its decoded planes:
// image/png has fast paths only for the image types it keeps (RGBA, Gray, Paletted …)
// and writes anything else at 16 bits per channel, one boxed colour per pixel;
// converting into an RGBA image first would hold a second copy of every pixel.

// rgbRows returns, for the JPEG colour models, a function filling one row of RGB
// bytes; ok is false for images png.Encode writes well itself.
func rgbRows(m image.Image) (fill func(y int, dst []byte), ok bool) {
	b := m.Bounds()
	switch m := m.(type) {
	case *image.YCbCr:
		return func(y int, dst []byte) {
			for x := range b.Dx() {
				c := m.YCbCrAt(b.Min.X+x, b.Min.Y+y)
				dst[3*x], dst[3*x+1], dst[3*x+2] = color.YCbCrToRGB(c.Y, c.Cb, c.Cr)
			}
		}, true
	case *image.CMYK:
		return func(y int, dst []byte) {
			for x := range b.Dx() {
				c := m.CMYKAt(b.Min.X+x, b.Min.Y+y)
				dst[3*x], dst[3*x+1], dst[3*x+2] = color.CMYKToRGB(c.C, c.M, c.Y, c.K)
			}
		}, true
	}
	return nil, false
}

// encodePNG writes m as PNG: JPEG colour models as 8-bit RGB row by row, the rest
// with image/png.
func encodePNG(w io.Writer, m image.Image) error {
	fill, ok := rgbRows(m)
	if !ok {
		return (&png.Encoder{}).Encode(w, m)
	}
	return writeRGBPNG(w, m.Bounds().Dx(), m.Bounds().Dy(), fill)
}

// writeRGBPNG writes a width×height 8-bit RGB PNG whose rows fill gives, each
// filtered the way image/png chooses (the filter whose output has the smallest sum of
// absolute values), compressed into IDAT chunks of 32 KiB.
func writeRGBPNG(w io.Writer, width, height int, fill func(y int, dst []byte)) error {
	bw := bufio.NewWriter(w)
	_, _ = bw.WriteString("\x89PNG\r\n\x1a\n") // an error sticks: writeChunk returns it
	ihdr := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, uint32(width)), uint32(height))
	if err := writeChunk(bw, "IHDR", append(ihdr, 8, 2, 0, 0, 0)); err != nil {
		return err
	}
	idat := &idatWriter{w: bw, buf: make([]byte, 0, 32<<10)}
	zw := zlib.NewWriter(idat)
	n := 3 * width
	prev, cur := make([]byte, n), make([]byte, n)
	var out [5][]byte
	for f := range out {
		out[f] = make([]byte, 1+n)
		out[f][0] = byte(f)
	}
	for y := range height {
		fill(y, cur)
		best := filterRow(out, cur, prev)
		if _, err := zw.Write(out[best]); err != nil {
			return err
		}
		prev, cur = cur, prev
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := idat.flush(); err != nil {
		return err
	}
	if err := writeChunk(bw, "IEND", nil); err != nil {
		return err
	}
	return bw.Flush()
}

// filterRow fills out[f][1:] with cur under each of the five filters (3 bytes per
// pixel) and returns the one image/png's heuristic picks.
func filterRow(out [5][]byte, cur, prev []byte) int {
	const bpp = 3
	best, bestSum := 0, -1
	for f := range out {
		o := out[f][1:]
		sum := 0
		for i := range cur {
			var a, b, c byte
			if i >= bpp {
				a, c = cur[i-bpp], prev[i-bpp]
			}
			b = prev[i]
			v := cur[i]
			switch f {
			case 1:
				v -= a
			case 2:
				v -= b
			case 3:
				v -= byte((int(a) + int(b)) / 2)
			case 4:
				v -= paeth(a, b, c)
			}
			o[i] = v
			sum += absInt8(v)
		}
		if bestSum < 0 || sum < bestSum {
			best, bestSum = f, sum
		}
	}
	return best
}

func absInt8(v byte) int {
	if s := int(int8(v)); s < 0 {
		return -s
	} else {
		return s
	}
}

// paeth is the PNG Paeth predictor.
func paeth(a, b, c byte) byte {
	p := int(a) + int(b) - int(c)
	pa, pb, pc := abs(p-int(a)), abs(p-int(b)), abs(p-int(c))
	switch {
	case pa <= pb && pa <= pc:
		return a
	case pb <= pc:
		return b
	}
	return c
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// writeChunk writes one chunk; a write error of w (it sticks in a bufio.Writer)
// comes back.
func writeChunk(w *bufio.Writer, typ string, data []byte) error {
	var head [8]byte
	binary.BigEndian.PutUint32(head[:4], uint32(len(data)))
	copy(head[4:], typ)
	crc := crc32.Update(crc32.Update(0, crc32.IEEETable, head[4:]), crc32.IEEETable, data)
	_, _ = w.Write(head[:])
	_, _ = w.Write(data)
	_, err := w.Write(binary.BigEndian.AppendUint32(head[:0], crc))
	return err
}

// idatWriter cuts the compressed stream into IDAT chunks.
type idatWriter struct {
	w   *bufio.Writer
	buf []byte
}

func (d *idatWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := min(len(p), cap(d.buf)-len(d.buf))
		d.buf = append(d.buf, p[:k]...)
		p = p[k:]
		if len(d.buf) == cap(d.buf) {
			if err := d.flush(); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

func (d *idatWriter) flush() error {
	if len(d.buf) == 0 {
		return nil
	}
	err := writeChunk(d.w, "IDAT", d.buf)
	d.buf = d.buf[:0]
	return err
}

package pngtest

import (
	"bufio"
	"compress/zlib"
	"encoding/binary"
	"hash/crc32"
	"io"
	"math"
)

// WriteRows writes a width × height 8-bit RGB PNG (RGBA with alpha) to w, asking row
// for each row's samples (3 or 4 bytes a pixel), top to bottom: no picture is held,
// so a test can write one of any size. Rows are Paeth-filtered and compressed at
// level (zlib's; 0 means its default).
func WriteRows(w io.Writer, width, height int, alpha bool, level int, row func(y int, px []byte)) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	if _, err := bw.WriteString("\x89PNG\r\n\x1a\n"); err != nil {
		return err
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], uint32(width))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(height))
	ihdr[8], ihdr[9] = 8, True
	channels := 3
	if alpha {
		ihdr[9], channels = TrueAlpha, 4
	}
	if err := writeChunk(bw, "IHDR", ihdr); err != nil {
		return err
	}
	if level == 0 {
		level = zlib.DefaultCompression
	}
	idat := &idatWriter{w: bw, buf: make([]byte, 0, 256<<10)}
	zw, err := zlib.NewWriterLevel(idat, level)
	if err != nil {
		return err
	}
	cur, prev := make([]byte, channels*width), make([]byte, channels*width)
	line := make([]byte, 1+channels*width)
	for y := range height {
		row(y, cur)
		line[0] = 4
		for i := range cur {
			var a, c byte
			if i >= channels {
				a, c = cur[i-channels], prev[i-channels]
			}
			line[1+i] = cur[i] - paeth(a, prev[i], c)
		}
		if _, err := zw.Write(line); err != nil {
			return err
		}
		cur, prev = prev, cur
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

// idatWriter cuts what it is given into IDAT chunks.
type idatWriter struct {
	w   io.Writer
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

func writeChunk(w io.Writer, typ string, data []byte) error {
	var b [8]byte
	binary.BigEndian.PutUint32(b[:4], uint32(len(data)))
	copy(b[4:], typ)
	crc := crc32.NewIEEE()
	crc.Write(b[4:8])
	crc.Write(data)
	if _, err := w.Write(b[:]); err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	binary.BigEndian.PutUint32(b[:4], crc.Sum32())
	_, err := w.Write(b[:4])
	return err
}

// Field is a row function for WriteRows (RGB) that draws something like a drone
// picture of a field: soil and green crop rows across gentle undulation, mottled by a
// smooth texture of amplitude texture (0 to 255, varying over 8 pixels: detail that a
// preview keeps), with grain of amplitude noise on one pixel in every. Grain and
// texture decide the PNG's size and its tiles', as a real photo's do.
func Field(width, height int, noise, every, texture int, seed uint64) func(y int, px []byte) {
	const cell = 8
	lattice := func(ix, iy int) float64 { // a value in [-1, 1] per lattice point
		h := uint64(ix)*0x9e3779b97f4a7c15 ^ uint64(iy)*0xc2b2ae3d27d4eb4f ^ seed
		h ^= h >> 29
		h *= 0xbf58476d1ce4e5b9
		h ^= h >> 32
		return float64(h%2001)/1000 - 1
	}
	return func(y int, px []byte) {
		state := seed ^ uint64(y+1)*0x9e3779b97f4a7c15
		next := func() uint64 { // xorshift: each row on its own, deterministic
			state ^= state << 13
			state ^= state >> 7
			state ^= state << 17
			return state
		}
		fy := float64(y) / float64(height)
		iy, ty := y/cell, float64(y%cell)/cell
		for x := range width {
			fx := float64(x) / float64(width)
			hill := 0.5 + 0.25*math.Sin(6*fx+3*fy) + 0.15*math.Sin(17*fy-5*fx)
			crop := math.Sin(float64(x+y/3)*0.35) > 0.2 && int(fy*12)%3 != 1
			r, g, b := 120+60*hill, 90+40*hill, 60+30*hill // soil
			if crop {
				r, g, b = 50+30*hill, 120+70*hill, 40+20*hill
			}
			t := 0.0
			if texture > 0 {
				ix, tx := x/cell, float64(x%cell)/cell
				top := lattice(ix, iy)*(1-tx) + lattice(ix+1, iy)*tx
				bottom := lattice(ix, iy+1)*(1-tx) + lattice(ix+1, iy+1)*tx
				t = float64(texture) * (top*(1-ty) + bottom*ty)
			}
			n := 0
			if r := next(); noise > 0 && (every <= 1 || r>>32%uint64(every) == 0) {
				n = int(r%uint64(2*noise+1)) - noise
			}
			px[3*x] = clampByte(r + t + float64(n))
			px[3*x+1] = clampByte(g + t + float64(n))
			px[3*x+2] = clampByte(b + t/2 + float64(n)/2)
		}
	}
}

func clampByte(v float64) byte {
	switch {
	case v < 0:
		return 0
	case v > 255:
		return 255
	}
	return byte(v)
}

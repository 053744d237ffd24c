// Package pngtest writes PNGs for tests: of every kind the PNG spec allows (each bit
// depth of each colour type, tRNS, Adam7 interlacing, every filter type, pixel data
// split over several IDAT chunks; image/png writes only some of them: no interlacing,
// no grey below 8 bits, no tRNS but a palette's), and photo-like pictures of any size
// streamed row by row (WriteRows, Field).
package pngtest

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"math/rand/v2"
)

// Colour types.
const (
	Grey      = 0
	True      = 2
	Palette   = 3
	GreyAlpha = 4
	TrueAlpha = 6
)

// Kind says how to write a picture.
type Kind struct {
	ColorType, Depth int
	Interlaced       bool
	// TRNS adds a tRNS chunk: the colour of the top-left pixel (grey, truecolour),
	// or alphas for the first entries (palette).
	TRNS bool
}

func (k Kind) String() string {
	names := map[int]string{Grey: "grey", True: "rgb", Palette: "palette", GreyAlpha: "grey-alpha", TrueAlpha: "rgba"}
	s := fmt.Sprintf("%s%d", names[k.ColorType], k.Depth)
	if k.TRNS {
		s += "-trns"
	}
	if k.Interlaced {
		s += "-adam7"
	}
	return s
}

// Kinds lists every colour type and bit depth, with and without tRNS where it
// applies, each plain and interlaced.
func Kinds() []Kind {
	var out []Kind
	add := func(ct int, depths []int, trns bool) {
		for _, d := range depths {
			for _, il := range []bool{false, true} {
				out = append(out, Kind{ColorType: ct, Depth: d, Interlaced: il})
				if trns {
					out = append(out, Kind{ColorType: ct, Depth: d, Interlaced: il, TRNS: true})
				}
			}
		}
	}
	add(Grey, []int{1, 2, 4, 8, 16}, true)
	add(True, []int{8, 16}, true)
	add(Palette, []int{1, 2, 4, 8}, true)
	add(GreyAlpha, []int{8, 16}, false)
	add(TrueAlpha, []int{8, 16}, false)
	return out
}

// Options tune the file's layout.
type Options struct {
	// IDATSize splits the pixel data into IDAT chunks of at most this many bytes
	// (default: one chunk).
	IDATSize int
	// Level is the zlib compression level (default zlib.DefaultCompression).
	Level int
}

// Photo is a picture with smooth gradients, texture and (in alpha) a transparent
// border and soft edges, deterministic in seed: something of everything a tiler
// must get right.
func Photo(w, h int, seed uint64) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for y := range h {
		for x := range w {
			n := byte(rng.IntN(24))
			r := byte(x*255/max(1, w-1)) ^ n
			g := byte(y*255/max(1, h-1)) + n
			b := byte((x+y)/3) ^ byte(rng.IntN(16))
			a := byte(255)
			switch d := min(x, y, w-1-x, h-1-y); {
			case d < 2:
				a = 0
			case d < 6:
				a = byte(d * 40)
			}
			img.SetNRGBA(x, y, color.NRGBA{r, g, b, a})
		}
	}
	return img
}

// Noise is a picture of random pixels, deterministic in seed: what no compressor
// shrinks.
func Noise(w, h int, seed uint64) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	rng := rand.New(rand.NewPCG(seed, seed+1))
	for i := range img.Pix {
		img.Pix[i] = byte(rng.Uint32())
	}
	return img
}

// Encode writes src as a PNG of kind k. The samples come from src's channels (the
// high bits for narrower depths; two channels make the 16-bit ones, so their low
// bytes vary too).
func Encode(src *image.NRGBA, k Kind, o Options) []byte {
	w, h := src.Rect.Dx(), src.Rect.Dy()
	var out bytes.Buffer
	out.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9] = byte(k.Depth), byte(k.ColorType)
	if k.Interlaced {
		ihdr[12] = 1
	}
	chunk(&out, "IHDR", ihdr)
	chunk(&out, "tEXt", []byte("Comment\x00written by pngtest"))
	if k.ColorType == Palette {
		n := 1 << k.Depth
		if n == 256 {
			n = 200 // indices beyond the palette happen, and are opaque black
		}
		pal := make([]byte, 3*n)
		rng := rand.New(rand.NewPCG(uint64(k.Depth), 7))
		for i := range pal {
			pal[i] = byte(rng.IntN(256))
		}
		chunk(&out, "PLTE", pal)
		if k.TRNS {
			alphas := make([]byte, max(1, n/2))
			for i := range alphas {
				alphas[i] = byte(i * 255 / len(alphas))
			}
			chunk(&out, "tRNS", alphas)
		}
	} else if k.TRNS {
		s, _ := samples(src, k, 0, 0)
		switch k.ColorType {
		case Grey:
			if k.Depth == 16 {
				chunk(&out, "tRNS", []byte{byte(s[0] >> 8), byte(s[0])})
			} else {
				chunk(&out, "tRNS", []byte{0, byte(s[0])})
			}
		case True:
			t := make([]byte, 6)
			for i := range 3 {
				if k.Depth == 16 {
					binary.BigEndian.PutUint16(t[2*i:], s[i])
				} else {
					t[2*i+1] = byte(s[i])
				}
			}
			chunk(&out, "tRNS", t)
		}
	}
	data := compress(pixelData(src, k), o.Level)
	size := o.IDATSize
	if size <= 0 {
		size = len(data)
	}
	for len(data) > 0 {
		n := min(size, len(data))
		chunk(&out, "IDAT", data[:n])
		data = data[n:]
	}
	chunk(&out, "IEND", nil)
	return out.Bytes()
}

func chunk(out *bytes.Buffer, typ string, data []byte) {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(len(data)))
	out.Write(b[:])
	out.WriteString(typ)
	out.Write(data)
	crc := crc32.NewIEEE()
	crc.Write([]byte(typ))
	crc.Write(data)
	binary.BigEndian.PutUint32(b[:], crc.Sum32())
	out.Write(b[:])
}

func compress(raw []byte, level int) []byte {
	var buf bytes.Buffer
	if level == 0 {
		level = zlib.DefaultCompression
	}
	zw, err := zlib.NewWriterLevel(&buf, level)
	if err != nil {
		panic(err)
	}
	if _, err := zw.Write(raw); err != nil {
		panic(err)
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// samples are the channel values of the pixel at x, y for kind k, and how many there
// are.
func samples(src *image.NRGBA, k Kind, x, y int) ([4]uint16, int) {
	c := src.NRGBAAt(src.Rect.Min.X+x, src.Rect.Min.Y+y)
	wide := func(a, b byte) uint16 { return uint16(a)<<8 | uint16(b) }
	narrow := func(v byte) uint16 { return uint16(v >> (8 - k.Depth)) }
	switch k.ColorType {
	case Grey:
		if k.Depth == 16 {
			return [4]uint16{wide(c.R, c.G)}, 1
		}
		return [4]uint16{narrow(c.R)}, 1
	case Palette:
		return [4]uint16{uint16(c.R^c.B) & (1<<k.Depth - 1)}, 1
	case GreyAlpha:
		if k.Depth == 16 {
			return [4]uint16{wide(c.R, c.G), wide(c.A, c.B)}, 2
		}
		return [4]uint16{uint16(c.R), uint16(c.A)}, 2
	case True:
		if k.Depth == 16 {
			return [4]uint16{wide(c.R, c.B), wide(c.G, c.R), wide(c.B, c.G)}, 3
		}
		return [4]uint16{uint16(c.R), uint16(c.G), uint16(c.B)}, 3
	default:
		if k.Depth == 16 {
			return [4]uint16{wide(c.R, c.B), wide(c.G, c.R), wide(c.B, c.G), wide(c.A, c.R)}, 4
		}
		return [4]uint16{uint16(c.R), uint16(c.G), uint16(c.B), uint16(c.A)}, 4
	}
}

// pixelData is the filtered scanlines of every pass, each row with the next filter
// type in turn.
func pixelData(src *image.NRGBA, k Kind) []byte {
	w, h := src.Rect.Dx(), src.Rect.Dy()
	scans := [][4]int{{1, 1, 0, 0}}
	if k.Interlaced {
		scans = [][4]int{{8, 8, 0, 0}, {8, 8, 4, 0}, {4, 8, 0, 4}, {4, 4, 2, 0}, {2, 4, 0, 2}, {2, 2, 1, 0}, {1, 2, 0, 1}}
	}
	_, channels := samples(src, k, 0, 0)
	bits := channels * k.Depth
	bpp := max(1, bits/8)
	var out []byte
	filter := 0
	for _, sc := range scans {
		pw := (w - sc[2] + sc[0] - 1) / sc[0]
		ph := (h - sc[3] + sc[1] - 1) / sc[1]
		if pw == 0 || ph == 0 {
			continue
		}
		rowBytes := (bits*pw + 7) / 8
		prev := make([]byte, rowBytes)
		for j := range ph {
			cur := make([]byte, rowBytes)
			bit := 0
			for i := range pw {
				px, n := samples(src, k, sc[2]+i*sc[0], sc[3]+j*sc[1])
				for _, s := range px[:n] {
					switch k.Depth {
					case 16:
						binary.BigEndian.PutUint16(cur[bit/8:], s)
					case 8:
						cur[bit/8] = byte(s)
					default:
						cur[bit/8] |= byte(s) << (8 - k.Depth - bit%8)
					}
					bit += k.Depth
				}
			}
			out = append(out, byte(filter))
			out = append(out, filterRow(filter, cur, prev, bpp)...)
			prev = cur
			filter = (filter + 1) % 5
		}
	}
	return out
}

func filterRow(f int, cur, prev []byte, bpp int) []byte {
	out := make([]byte, len(cur))
	for i := range cur {
		var a, b, c byte
		if i >= bpp {
			a, c = cur[i-bpp], prev[i-bpp]
		}
		b = prev[i]
		switch f {
		case 0:
			out[i] = cur[i]
		case 1:
			out[i] = cur[i] - a
		case 2:
			out[i] = cur[i] - b
		case 3:
			out[i] = cur[i] - byte((int(a)+int(b))/2)
		case 4:
			out[i] = cur[i] - paeth(a, b, c)
		}
	}
	return out
}

func paeth(a, b, c byte) byte {
	p := int(a) + int(b) - int(c)
	pa, pb, pc := absInt(p-int(a)), absInt(p-int(b)), absInt(p-int(c))
	switch {
	case pa <= pb && pa <= pc:
		return a
	case pb <= pc:
		return b
	}
	return c
}

func absInt(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// NRGBA is a picture image/png decoded, as 8-bit non-premultiplied RGBA: the
// concrete pixel values (16-bit ones by their high byte), never a colour model's
// rounding.
func NRGBA(img image.Image) *image.NRGBA {
	b := img.Bounds()
	out := image.NewNRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			var c color.NRGBA
			switch m := img.(type) {
			case *image.Gray:
				v := m.GrayAt(x, y).Y
				c = color.NRGBA{v, v, v, 0xff}
			case *image.Gray16:
				v := byte(m.Gray16At(x, y).Y >> 8)
				c = color.NRGBA{v, v, v, 0xff}
			case *image.RGBA:
				c = color.NRGBA(m.RGBAAt(x, y)) // PNG truecolour without alpha: opaque
			case *image.RGBA64:
				p := m.RGBA64At(x, y)
				c = color.NRGBA{byte(p.R >> 8), byte(p.G >> 8), byte(p.B >> 8), byte(p.A >> 8)}
			case *image.NRGBA:
				c = m.NRGBAAt(x, y)
			case *image.NRGBA64:
				p := m.NRGBA64At(x, y)
				c = color.NRGBA{byte(p.R >> 8), byte(p.G >> 8), byte(p.B >> 8), byte(p.A >> 8)}
			case *image.Paletted:
				switch p := m.Palette[m.ColorIndexAt(x, y)].(type) {
				case color.RGBA:
					c = color.NRGBA(p) // opaque: image/png's palette without tRNS
				case color.NRGBA:
					c = p
				default:
					panic(fmt.Sprintf("pngtest: palette entry %T", p))
				}
			default:
				panic(fmt.Sprintf("pngtest: image type %T", img))
			}
			out.SetNRGBA(x-b.Min.X, y-b.Min.Y, c)
		}
	}
	return out
}

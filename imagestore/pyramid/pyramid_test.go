package pyramid_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"math"
	"sync"
	"testing"

	"github.com/gardend/gardend/imagestore/pngtest"
	"github.com/gardend/gardend/imagestore/pyramid"
)

// memFile is an io.WriterAt and io.ReaderAt in memory.
type memFile struct {
	mu sync.Mutex
	b  []byte
}

func (m *memFile) WriteAt(p []byte, off int64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if end := int(off) + len(p); end > len(m.b) {
		m.b = append(m.b, make([]byte, end-len(m.b))...)
	}
	copy(m.b[off:], p)
	return len(p), nil
}

func (m *memFile) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(m.b)) {
		return 0, io.EOF
	}
	n := copy(p, m.b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// reference is the pyramid of img built the plain way, the whole picture in memory:
// level by level, each pixel Mean4 of the 2 × 2 (or fewer, at edges) pixels above.
func reference(img *image.NRGBA, levels int) []*image.NRGBA {
	out := make([]*image.NRGBA, levels)
	out[levels-1] = img
	for z := levels - 2; z >= 0; z-- {
		up := out[z+1]
		uw, uh := up.Rect.Dx(), up.Rect.Dy()
		lv := image.NewNRGBA(image.Rect(0, 0, (uw+1)/2, (uh+1)/2))
		for j := range lv.Rect.Dy() {
			for i := range lv.Rect.Dx() {
				var px [][]byte
				for _, d := range []image.Point{{0, 0}, {1, 0}, {0, 1}, {1, 1}} {
					x, y := 2*i+d.X, 2*j+d.Y
					if x < uw && y < uh {
						o := up.PixOffset(x, y)
						px = append(px, up.Pix[o:o+4])
					}
				}
				m := pyramid.Mean4(px...)
				copy(lv.Pix[lv.PixOffset(i, j):], m[:])
			}
		}
		out[z] = lv
	}
	return out
}

func build(t *testing.T, b []byte, o pyramid.Options) (*pyramid.Pack, *memFile) {
	t.Helper()
	var out memFile
	_, n, err := pyramid.Build(context.Background(), bytes.NewReader(b), int64(len(b)), &out, o)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(len(out.b)) {
		t.Fatalf("Build says %d bytes, wrote %d", n, len(out.b))
	}
	p, err := pyramid.OpenPack(&out, int64(len(out.b)))
	if err != nil {
		t.Fatal(err)
	}
	return p, &out
}

func decodeBlob(t *testing.T, p *pyramid.Pack, blob pyramid.Blob) image.Image {
	t.Helper()
	data, err := io.ReadAll(p.Open(blob))
	if err != nil {
		t.Fatal(err)
	}
	var img image.Image
	if blob.Format == pyramid.JPEG {
		img, err = jpeg.Decode(bytes.NewReader(data))
	} else {
		img, err = png.Decode(bytes.NewReader(data))
	}
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// sameRegion fails unless got equals want's rectangle r pixel for pixel.
func sameRegion(t *testing.T, what string, got *image.NRGBA, want *image.NRGBA, r image.Rectangle) {
	t.Helper()
	if got.Rect.Dx() != r.Dx() || got.Rect.Dy() != r.Dy() {
		t.Fatalf("%s: %v, want %v", what, got.Rect.Size(), r.Size())
	}
	for y := range r.Dy() {
		for x := range r.Dx() {
			g := got.Pix[got.PixOffset(x, y):][:4]
			w := want.Pix[want.PixOffset(r.Min.X+x, r.Min.Y+y):][:4]
			if !bytes.Equal(g, w) {
				t.Fatalf("%s: pixel %d,%d is %v, want %v", what, x, y, g, w)
			}
		}
	}
}

// TestPyramidPixelByPixel builds the pyramid of every kind of PNG and checks every
// tile of every level, and the preview, pixel by pixel against a pyramid made from
// image/png's decoding of the same file (tiles of 16 pixels: several levels, edge
// tiles, odd sizes at every level).
func TestPyramidPixelByPixel(t *testing.T) {
	sizes := []image.Point{{1, 1}, {16, 16}, {17, 3}, {37, 23}, {70, 129}}
	for _, k := range pngtest.Kinds() {
		t.Run(k.String(), func(t *testing.T) {
			for _, sz := range sizes {
				b := pngtest.Encode(pngtest.Photo(sz.X, sz.Y, uint64(sz.X)), k, pngtest.Options{IDATSize: 97})
				checkPyramid(t, b, pyramid.Options{TileSize: 16, PreviewSize: 40, ThumbSize: 10, PNGOnly: true})
			}
		})
	}
}

func checkPyramid(t *testing.T, b []byte, o pyramid.Options) {
	t.Helper()
	decoded, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	full := pngtest.NRGBA(decoded)
	p, _ := build(t, b, o)
	in := p.Info
	if in.Width != full.Rect.Dx() || in.Height != full.Rect.Dy() {
		t.Fatalf("pack says %d×%d, the picture is %v", in.Width, in.Height, full.Rect.Size())
	}
	ref := reference(full, in.Levels)
	if w, h := ref[0].Rect.Dx(), ref[0].Rect.Dy(); max(w, h) > o.TileSize || (in.Levels > 1 && max(w, h) <= o.TileSize/2) {
		t.Fatalf("level 0 is %d×%d with %d levels", w, h, in.Levels)
	}
	for z := range in.Levels {
		cols, rows := in.Grid(z)
		for y := range rows {
			for x := range cols {
				blob, ok, err := p.Tile(z, x, y)
				if err != nil || !ok {
					t.Fatalf("tile %d/%d/%d: %v %v", z, x, y, ok, err)
				}
				x0, y0, w, h := in.TileRect(z, x, y)
				got := pngtest.NRGBA(decodeBlob(t, p, blob))
				sameRegion(t, fmt.Sprintf("tile %d/%d/%d", z, x, y), got, ref[z], image.Rect(x0, y0, x0+w, y0+h))
			}
		}
		if _, ok, _ := p.Tile(z, cols, 0); ok {
			t.Fatalf("level %d has a tile beyond its %d columns", z, cols)
		}
	}
	if _, ok, _ := p.Tile(in.Levels, 0, 0); ok {
		t.Fatal("a tile beyond the last level")
	}
	prev, err := p.Preview()
	if err != nil {
		t.Fatal(err)
	}
	sameRegion(t, "preview", pngtest.NRGBA(decodeBlob(t, p, prev)), ref[in.PreviewLevel], ref[in.PreviewLevel].Rect)
	if pw, ph := in.PreviewWidth, in.PreviewHeight; max(pw, ph) > o.PreviewSize && in.PreviewLevel > 0 {
		t.Fatalf("preview %d×%d, larger than %d", pw, ph, o.PreviewSize)
	}
	th, err := p.Thumb()
	if err != nil {
		t.Fatal(err)
	}
	thumb := decodeBlob(t, p, th).Bounds()
	long := max(full.Rect.Dx(), full.Rect.Dy())
	if max(thumb.Dx(), thumb.Dy()) != min(long, o.ThumbSize) || thumb.Dx() != in.ThumbWidth || thumb.Dy() != in.ThumbHeight {
		t.Fatalf("thumbnail %v (pack says %d×%d) of a %v picture, want %d on the longer side", thumb.Size(), in.ThumbWidth, in.ThumbHeight, full.Rect.Size(), o.ThumbSize)
	}
}

// TestWideBandsInFiles: bands written to scratch files give the same pyramid.
func TestWideBandsInFiles(t *testing.T) {
	b := pngtest.Encode(pngtest.Photo(300, 70, 9), pngtest.Kind{ColorType: pngtest.TrueAlpha, Depth: 8, Interlaced: true}, pngtest.Options{})
	dir := t.TempDir()
	checkPyramid(t, b, pyramid.Options{TileSize: 16, PreviewSize: 100, ThumbSize: 20, PNGOnly: true, MaxBandBytes: 1000, ScratchDir: dir, Workers: 3})
}

// TestJPEGWhereOpaque: tiles without transparent pixels are JPEG, close to the
// picture; tiles with some are PNG, exact.
func TestJPEGWhereOpaque(t *testing.T) {
	src := pngtest.Photo(200, 150, 2) // transparent and soft borders
	b := pngtest.Encode(src, pngtest.Kind{ColorType: pngtest.TrueAlpha, Depth: 8}, pngtest.Options{})
	p, _ := build(t, b, pyramid.Options{TileSize: 64, Workers: 2})
	ref := reference(src, p.Info.Levels)
	z := p.Info.Levels - 1
	formats := map[pyramid.Format]int{}
	cols, rows := p.Info.Grid(z)
	for y := range rows {
		for x := range cols {
			blob, _, err := p.Tile(z, x, y)
			if err != nil {
				t.Fatal(err)
			}
			formats[blob.Format]++
			x0, y0, w, h := p.Info.TileRect(z, x, y)
			r := image.Rect(x0, y0, x0+w, y0+h)
			got := decodeBlob(t, p, blob)
			edge := x == 0 || y == 0 || x == cols-1 || y == rows-1
			switch {
			case edge && blob.Format != pyramid.PNG:
				t.Errorf("tile %d,%d has transparent pixels, is %v", x, y, blob.Format)
			case !edge && blob.Format != pyramid.JPEG:
				t.Errorf("tile %d,%d is opaque, is %v", x, y, blob.Format)
			case blob.Format == pyramid.PNG:
				sameRegion(t, "png tile", pngtest.NRGBA(got), ref[z], r)
			default:
				if db := psnr(got, ref[z], r); db < 27 {
					t.Errorf("tile %d,%d: PSNR %.1f dB", x, y, db)
				}
			}
		}
	}
	if formats[pyramid.JPEG] == 0 || formats[pyramid.PNG] == 0 {
		t.Fatalf("formats %v", formats)
	}
	// An opaque picture: every tile, the preview and the thumbnail are JPEG.
	b = pngtest.Encode(src, pngtest.Kind{ColorType: pngtest.True, Depth: 8}, pngtest.Options{})
	p, _ = build(t, b, pyramid.Options{TileSize: 64})
	for _, get := range []func() (pyramid.Blob, error){p.Thumb, p.Preview} {
		if blob, err := get(); err != nil || blob.Format != pyramid.JPEG {
			t.Errorf("%+v %v, want JPEG", blob, err)
		}
	}
}

func psnr(got image.Image, want *image.NRGBA, r image.Rectangle) float64 {
	var se float64
	for y := range r.Dy() {
		for x := range r.Dx() {
			gr, gg, gb, _ := got.At(got.Bounds().Min.X+x, got.Bounds().Min.Y+y).RGBA()
			w := want.NRGBAAt(r.Min.X+x, r.Min.Y+y)
			for _, d := range []float64{float64(gr>>8) - float64(w.R), float64(gg>>8) - float64(w.G), float64(gb>>8) - float64(w.B)} {
				se += d * d
			}
		}
	}
	mse := se / float64(3*r.Dx()*r.Dy())
	return 10 * math.Log10(255*255/max(mse, 1e-9))
}

func TestMean4(t *testing.T) {
	red, clear0, half := []byte{255, 0, 0, 255}, []byte{0, 255, 0, 0}, []byte{0, 0, 255, 128}
	for _, tc := range []struct {
		px   [][]byte
		want [4]byte
	}{
		{[][]byte{red, red, red, red}, [4]byte{255, 0, 0, 255}},
		{[][]byte{red, clear0, clear0, red}, [4]byte{255, 0, 0, 128}}, // transparent lends no colour
		{[][]byte{clear0, clear0}, [4]byte{0, 0, 0, 0}},
		{[][]byte{red, half}, [4]byte{170, 0, 85, 192}}, // weighted 255:128
		{[][]byte{{10, 20, 30, 255}, {11, 21, 31, 255}}, [4]byte{11, 21, 31, 255}},
	} {
		if got := pyramid.Mean4(tc.px...); got != tc.want {
			t.Errorf("Mean4%v = %v, want %v", tc.px, got, tc.want)
		}
	}
}

func TestLayout(t *testing.T) {
	for _, tc := range []struct{ w, h, levels int }{
		{1, 1, 1}, {256, 10, 1}, {257, 10, 2}, {512, 512, 2}, {513, 1, 3}, {2536, 1731, 5}, {12000, 9000, 7},
	} {
		l := pyramid.NewLayout(tc.w, tc.h, 256)
		if l.Levels != tc.levels {
			t.Errorf("%d×%d: %d levels, want %d", tc.w, tc.h, l.Levels, tc.levels)
		}
		if w, h := l.LevelSize(l.Levels - 1); w != tc.w || h != tc.h {
			t.Errorf("%d×%d: last level %d×%d", tc.w, tc.h, w, h)
		}
	}
}

// TestLimits: a picture over the pixel limit is refused before anything is decoded,
// naming the limit.
func TestLimits(t *testing.T) {
	b := pngtest.Encode(pngtest.Photo(40, 30, 1), pngtest.Kind{ColorType: pngtest.True, Depth: 8}, pngtest.Options{})
	var out memFile
	_, _, err := pyramid.Build(context.Background(), bytes.NewReader(b), int64(len(b)), &out, pyramid.Options{MaxPixels: 1000})
	if !errors.Is(err, pyramid.ErrPicture) || err.Error() != "the picture cannot be tiled: it has 40 × 30 = 1200 pixels, more than the 1000 pixels allowed" {
		t.Fatalf("error %v", err)
	}
	_, _, err = pyramid.Build(context.Background(), bytes.NewReader(b), int64(len(b)), &out, pyramid.Options{MaxSide: 39})
	if !errors.Is(err, pyramid.ErrPicture) {
		t.Fatalf("error %v", err)
	}
	damaged := bytes.Clone(b)
	damaged[len(damaged)-30] ^= 1
	if _, _, err = pyramid.Build(context.Background(), bytes.NewReader(damaged), int64(len(damaged)), &out, pyramid.Options{}); !errors.Is(err, pyramid.ErrPicture) {
		t.Fatalf("damaged: error %v", err)
	}
}

// TestCancel: a cancelled build stops with the context's error.
func TestCancel(t *testing.T) {
	b := pngtest.Encode(pngtest.Photo(300, 300, 1), pngtest.Kind{ColorType: pngtest.True, Depth: 8}, pngtest.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	var out memFile
	_, _, err := pyramid.Build(ctx, bytes.NewReader(b), int64(len(b)), &out, pyramid.Options{TileSize: 16, Workers: 2, Progress: func(rows, _ int) {
		if rows >= 16 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v", err)
	}
}

package pngstream_test

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"runtime"
	"testing"

	"github.com/gardend/gardend/imagestore/pngstream"
	"github.com/gardend/gardend/imagestore/pngtest"
)

// decodeAll decodes b row by row into one picture.
func decodeAll(b []byte) (*image.NRGBA, pngstream.Header, error) {
	d, err := pngstream.NewDecoder(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, pngstream.Header{}, err
	}
	h := d.Header()
	img := image.NewNRGBA(image.Rect(0, 0, h.Width, h.Height))
	for y := 0; ; y++ {
		var row []byte
		if y < h.Height {
			row = img.Pix[y*img.Stride : (y+1)*img.Stride]
		} else {
			row = make([]byte, 4*h.Width)
		}
		err := d.Next(row)
		if err == io.EOF {
			if y != h.Height {
				return nil, h, fmt.Errorf("EOF after %d of %d rows", y, h.Height)
			}
			return img, h, nil
		}
		if err != nil {
			return nil, h, err
		}
		if y >= h.Height {
			return nil, h, errors.New("a row past the last")
		}
	}
}

// same fails unless the streaming decoder and image/png agree on b: both refuse it,
// or both decode the same pixels.
func same(t *testing.T, b []byte) (ok bool) {
	t.Helper()
	want, wantErr := png.Decode(bytes.NewReader(b))
	got, _, err := decodeAll(b)
	switch {
	case wantErr != nil && err != nil:
		if !errors.Is(err, pngstream.ErrFormat) {
			t.Fatalf("error %v does not wrap ErrFormat", err)
		}
		return false
	case wantErr != nil:
		t.Fatalf("image/png refuses (%v), the stream decoder does not", wantErr)
	case err != nil:
		t.Fatalf("image/png decodes it, the stream decoder says %v", err)
	}
	ref := pngtest.NRGBA(want)
	if !bytes.Equal(ref.Pix, got.Pix) || ref.Rect != got.Rect {
		for i := range ref.Pix {
			if ref.Pix[i] != got.Pix[i] {
				px := i / 4
				t.Fatalf("pixel %d,%d differs: image/png %v, stream %v", px%ref.Rect.Dx(), px/ref.Rect.Dx(), ref.Pix[i&^3:i&^3+4], got.Pix[i&^3:i&^3+4])
			}
		}
		t.Fatalf("sizes differ: %v, %v", ref.Rect, got.Rect)
	}
	return true
}

func TestEveryKindDecodesAsImagePNG(t *testing.T) {
	sizes := []image.Point{{1, 1}, {2, 3}, {5, 1}, {1, 9}, {9, 9}, {37, 23}, {64, 17}}
	for _, k := range pngtest.Kinds() {
		t.Run(k.String(), func(t *testing.T) {
			for _, sz := range sizes {
				src := pngtest.Photo(sz.X, sz.Y, uint64(sz.X*100+sz.Y))
				for _, idat := range []int{0, 7} {
					b := pngtest.Encode(src, k, pngtest.Options{IDATSize: idat})
					if !same(t, b) {
						t.Fatalf("%v: image/png refuses the test's own picture", sz)
					}
				}
			}
		})
	}
}

func TestHeader(t *testing.T) {
	src := pngtest.Photo(30, 20, 1)
	for _, tc := range []struct {
		kind        pngtest.Kind
		transparent bool
	}{
		{pngtest.Kind{ColorType: pngtest.True, Depth: 8}, false},
		{pngtest.Kind{ColorType: pngtest.True, Depth: 8, TRNS: true}, true},
		{pngtest.Kind{ColorType: pngtest.Grey, Depth: 2, Interlaced: true}, false},
		{pngtest.Kind{ColorType: pngtest.TrueAlpha, Depth: 16}, true},
		{pngtest.Kind{ColorType: pngtest.Palette, Depth: 4}, false},
		{pngtest.Kind{ColorType: pngtest.Palette, Depth: 4, TRNS: true}, true},
	} {
		b := pngtest.Encode(src, tc.kind, pngtest.Options{})
		d, err := pngstream.NewDecoder(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		h := d.Header()
		want := pngstream.Header{Width: 30, Height: 20, BitDepth: tc.kind.Depth, ColorType: tc.kind.ColorType, Interlaced: tc.kind.Interlaced, Transparent: tc.transparent}
		if h != want {
			t.Errorf("%v: header %+v, want %+v", tc.kind, h, want)
		}
	}
}

// TestDamagedAsImagePNG cuts and flips bytes of pictures of several kinds: every
// variant is refused by both decoders or decoded alike.
func TestDamagedAsImagePNG(t *testing.T) {
	src := pngtest.Photo(19, 13, 3)
	for _, k := range []pngtest.Kind{
		{ColorType: pngtest.TrueAlpha, Depth: 8},
		{ColorType: pngtest.Palette, Depth: 2, TRNS: true, Interlaced: true},
		{ColorType: pngtest.Grey, Depth: 16, TRNS: true, Interlaced: true},
	} {
		b := pngtest.Encode(src, k, pngtest.Options{IDATSize: 50})
		for n := 0; n < len(b); n += 3 {
			same(t, b[:n])
		}
		for i := range b {
			c := bytes.Clone(b)
			c[i] ^= 0x10
			same(t, c)
		}
	}
}

// TestTrailingData: bytes after IEND are ignored, as image/png ignores them; extra
// pixel data is an error.
func TestTrailingData(t *testing.T) {
	b := pngtest.Encode(pngtest.Photo(8, 8, 4), pngtest.Kind{ColorType: pngtest.True, Depth: 8}, pngtest.Options{})
	if !same(t, append(bytes.Clone(b), "trailing garbage"...)) {
		t.Fatal("trailing bytes after IEND refused")
	}
}

// failingReader fails every read past its first limit bytes.
type failingReader struct {
	r     io.ReaderAt
	limit int64
}

var errDisk = errors.New("disk on fire")

func (f failingReader) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > f.limit {
		return 0, errDisk
	}
	return f.r.ReadAt(p, off)
}

// TestReadErrorsAreNotFormatErrors: a failing disk is not the picture's fault.
func TestReadErrorsAreNotFormatErrors(t *testing.T) {
	b := pngtest.Encode(pngtest.Photo(300, 200, 5), pngtest.Kind{ColorType: pngtest.True, Depth: 8}, pngtest.Options{})
	for _, limit := range []int64{100, int64(len(b)) / 2, int64(len(b)) - 10} {
		err := readAll(failingReader{bytes.NewReader(b), limit}, int64(len(b)))
		if !errors.Is(err, errDisk) || errors.Is(err, pngstream.ErrFormat) {
			t.Fatalf("read error after %d bytes: decoder says %v, want the reader's error", limit, err)
		}
	}
}

func readAll(r io.ReaderAt, size int64) error {
	d, err := pngstream.NewDecoder(r, size)
	if err != nil {
		return err
	}
	row := make([]byte, 4*d.Header().Width)
	for err == nil {
		err = d.Next(row)
	}
	if err == io.EOF {
		return nil
	}
	return err
}

// TestMemoryIsRows: a picture decodes in memory proportional to its width, not to
// its size (8.6 MB of 16-bit pixels here).
func TestMemoryIsRows(t *testing.T) {
	const w, h = 1200, 900
	src := pngtest.Photo(w, h, 6)
	for _, il := range []bool{false, true} {
		b := pngtest.Encode(src, pngtest.Kind{ColorType: pngtest.TrueAlpha, Depth: 16, Interlaced: il}, pngtest.Options{Level: 1})
		row := make([]byte, 4*w)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		d, err := pngstream.NewDecoder(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		for {
			if err := d.Next(row); err == io.EOF {
				break
			} else if err != nil {
				t.Fatal(err)
			}
		}
		runtime.ReadMemStats(&after)
		// Rows and buffers of each pass, once; zlib's Huffman tables, short-lived, once
		// per deflate block. Far from the 8.6 MB the picture's pixels take.
		t.Logf("interlaced %v: %d bytes allocated", il, after.TotalAlloc-before.TotalAlloc)
		if n := after.TotalAlloc - before.TotalAlloc; n > 2<<20 {
			t.Errorf("interlaced %v: %d bytes allocated for %d rows of %d bytes", il, n, h, 8*w)
		}
	}
}

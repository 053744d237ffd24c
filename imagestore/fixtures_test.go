package imagestore

import (
	"bytes"
	"encoding/binary"
	"flag"
	"hash/crc32"
	"image"
	"image/color"
	"image/color/palette"
	"image/gif"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

// update regenerates the committed fixtures: go test ./imagestore -run TestFixtures -update
// Encoders may change between Go versions, so the fixtures are checked by decoding,
// not compared byte-wise with fresh output.
var update = flag.Bool("update", false, "rewrite testdata/images fixtures")

// fixtureDir is testdata/images at the repository root, shared with other packages.
const fixtureDir = "../testdata/images"

// Fixture names and the dimensions of the images in them.
const (
	fixturePNG      = "garden.png"          // 64×48 RGBA
	fixturePaletted = "garden-paletted.png" // 16×8 paletted: DecodeConfig reads PLTE too
	fixtureJPEG     = "garden.jpg"          // 64×48, named honestly
	fixtureGIF      = "garden.gif"          // 64×48
	fixtureText     = "text.png"            // a text file with a PNG name
	fixtureZeroW    = "zero-width.png"      // signature + IHDR with width 0, valid CRC
	fixtureW        = 64
	fixtureH        = 48
)

func gradient(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x * 4), uint8(y * 5), 120, 255})
		}
	}
	return img
}

// pngWithIHDR is a PNG signature followed by one IHDR chunk with a correct CRC, so
// that only the values themselves can make DecodeConfig fail.
func pngWithIHDR(width, height uint32) []byte {
	var chunk bytes.Buffer
	chunk.WriteString("IHDR")
	binary.Write(&chunk, binary.BigEndian, width)
	binary.Write(&chunk, binary.BigEndian, height)
	chunk.Write([]byte{8, 6, 0, 0, 0}) // 8-bit RGBA, deflate, no filter/interlace
	var b bytes.Buffer
	b.WriteString(pngSignature)
	binary.Write(&b, binary.BigEndian, uint32(chunk.Len()-4))
	b.Write(chunk.Bytes())
	binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(chunk.Bytes()))
	return b.Bytes()
}

func generateFixtures(t *testing.T) map[string][]byte {
	t.Helper()
	img := gradient(fixtureW, fixtureH)
	out := map[string][]byte{}
	encode := func(name string, enc func(*bytes.Buffer) error) {
		var b bytes.Buffer
		if err := enc(&b); err != nil {
			t.Fatalf("encode %s: %v", name, err)
		}
		out[name] = b.Bytes()
	}
	encode(fixturePNG, func(b *bytes.Buffer) error { return png.Encode(b, img) })
	encode(fixturePaletted, func(b *bytes.Buffer) error {
		p := image.NewPaletted(image.Rect(0, 0, 16, 8), palette.Plan9)
		for i := range p.Pix {
			p.Pix[i] = uint8(i)
		}
		return png.Encode(b, p)
	})
	encode(fixtureJPEG, func(b *bytes.Buffer) error { return jpeg.Encode(b, img, &jpeg.Options{Quality: 80}) })
	encode(fixtureGIF, func(b *bytes.Buffer) error { return gif.Encode(b, img, nil) })
	out[fixtureText] = []byte("This is a text file, not an image.\n")
	out[fixtureZeroW] = pngWithIHDR(0, 10)
	return out
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, name))
	if err != nil {
		t.Fatalf("fixture (regenerate with -update): %v", err)
	}
	return b
}

// TestFixtures checks that each committed fixture is what its name claims.
func TestFixtures(t *testing.T) {
	if *update {
		for name, b := range generateFixtures(t) {
			if err := os.WriteFile(filepath.Join(fixtureDir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	decodes := []struct {
		name   string
		decode func([]byte) (image.Image, error)
		w, h   int
	}{
		{fixturePNG, func(b []byte) (image.Image, error) { return png.Decode(bytes.NewReader(b)) }, fixtureW, fixtureH},
		{fixturePaletted, func(b []byte) (image.Image, error) { return png.Decode(bytes.NewReader(b)) }, 16, 8},
		{fixtureJPEG, func(b []byte) (image.Image, error) { return jpeg.Decode(bytes.NewReader(b)) }, fixtureW, fixtureH},
		{fixtureGIF, func(b []byte) (image.Image, error) { return gif.Decode(bytes.NewReader(b)) }, fixtureW, fixtureH},
	}
	for _, tc := range decodes {
		img, err := tc.decode(readFixture(t, tc.name))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := img.Bounds().Size(); got != image.Pt(tc.w, tc.h) {
			t.Errorf("%s: size %v, want %dx%d", tc.name, got, tc.w, tc.h)
		}
	}
	if _, _, err := image.DecodeConfig(bytes.NewReader(readFixture(t, fixtureText))); err == nil {
		t.Errorf("%s decodes as an image", fixtureText)
	}
	if !bytes.Equal(readFixture(t, fixtureZeroW), pngWithIHDR(0, 10)) {
		t.Errorf("%s differs from pngWithIHDR(0, 10)", fixtureZeroW)
	}
}

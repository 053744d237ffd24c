package imagestore

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"runtime"
	"strings"
	"testing"
)

func encodePNG(t testing.TB, m image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// verifyImages are PNGs of every colour type image/png writes, with odd sizes.
func verifyImages(t testing.TB) map[string][]byte {
	rgba := image.NewNRGBA(image.Rect(0, 0, 37, 11))
	gray16 := image.NewGray16(image.Rect(0, 0, 5, 9))
	pal := image.NewPaletted(image.Rect(0, 0, 13, 3), color.Palette{color.Black, color.White, color.RGBA{200, 0, 0, 128}})
	for y := range 11 {
		for x := range 37 {
			rgba.Set(x, y, color.NRGBA{uint8(x * 7), uint8(y * 20), uint8(x ^ y), uint8(255 - x)})
			gray16.Set(x%5, y%9, color.Gray16{uint16(x * y * 999)})
			pal.SetColorIndex(x%13, y%3, uint8((x+y)%3))
		}
	}
	opaque := image.NewRGBA(image.Rect(0, 0, 1, 1))
	opaque.Set(0, 0, color.RGBA{1, 2, 3, 255})
	return map[string][]byte{
		"nrgba": encodePNG(t, rgba), "gray16": encodePNG(t, gray16), "paletted": encodePNG(t, pal),
		"one pixel": encodePNG(t, opaque), "gray": encodePNG(t, image.NewGray(image.Rect(0, 0, 3, 2))),
	}
}

// TestVerifyPNG: whole, valid PNGs pass with their size; damage anywhere (a CRC, the
// pixel data, a missing end) is found, as image/png.Decode finds it.
func TestVerifyPNG(t *testing.T) {
	for name, data := range verifyImages(t) {
		cfg, _ := png.DecodeConfig(bytes.NewReader(data))
		w, h, err := VerifyPNG(bytes.NewReader(data), 1<<20)
		if err != nil || w != cfg.Width || h != cfg.Height {
			t.Errorf("%s: %d×%d, %v", name, w, h, err)
		}
	}
	good := verifyImages(t)["nrgba"]
	flip := func(i int) []byte { b := bytes.Clone(good); b[i] ^= 0x40; return b }
	idat := bytes.Index(good, []byte("IDAT"))
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"not a PNG", []byte("\xff\xd8\xff\xe0 a JPEG"), "JPEG"},
		{"header CRC", flip(29), "checksum"},
		{"pixel data", flip(idat + 40), ""},
		{"data CRC", flip(idat + 4 + int(binary.BigEndian.Uint32(good[idat-4:]))), "checksum"},
		{"no IEND", good[:len(good)-12], "IEND"},
		{"cut in the data", good[:idat+30], "ends"},
		{"too large", good, "more than the 0 million"},
	} {
		max := int64(1 << 20)
		if tc.name == "too large" {
			max = 100
		}
		_, _, err := VerifyPNG(bytes.NewReader(tc.data), max)
		if _, derr := png.Decode(bytes.NewReader(tc.data)); derr == nil && tc.name != "too large" {
			t.Fatalf("%s: image/png decodes it", tc.name)
		}
		if !errors.Is(err, ErrInvalidPNG) && !errors.Is(err, ErrNotPNG) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// TestVerifyPNGMemory: a 2000×2000 PNG of 16-bit RGBA (32 MB of pixels) is verified
// with a few buffers.
func TestVerifyPNGMemory(t *testing.T) {
	data := largePNG(t, 2000, 2000)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	w, h, err := VerifyPNG(bytes.NewReader(data), 100_000_000)
	runtime.ReadMemStats(&after)
	if err != nil || w != 2000 || h != 2000 {
		t.Fatalf("%d×%d %v", w, h, err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Fatalf("verifying %d×%d allocated %d KiB", w, h, n>>10)
	}
}

// largePNG writes a w×h RGBA 16-bit PNG of zero pixels, row by row, without an image
// in memory: what a drone's orthophoto export can look like.
func largePNG(t testing.TB, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString(pngSignature)
	chunk := func(typ string, data []byte) {
		b.Write(binary.BigEndian.AppendUint32(nil, uint32(len(data))))
		b.WriteString(typ)
		b.Write(data)
		b.Write(binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(append([]byte(typ), data...))))
	}
	ihdr := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, uint32(w)), uint32(h))
	chunk("IHDR", append(ihdr, 16, 6, 0, 0, 0))
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	row := make([]byte, 1+w*8)
	for range h {
		if _, err := zw.Write(row); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	for data := z.Bytes(); len(data) > 0; {
		n := min(len(data), 1<<16)
		chunk("IDAT", data[:n])
		data = data[n:]
	}
	chunk("IEND", nil)
	return b.Bytes()
}

// FuzzVerifyPNG: VerifyPNG accepts what image/png.Decode accepts, and finds the
// damage it finds.
func FuzzVerifyPNG(f *testing.F) {
	for _, data := range verifyImages(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, derr := png.Decode(bytes.NewReader(data))
		w, h, err := VerifyPNG(bytes.NewReader(data), 1<<22)
		cfg, cerr := png.DecodeConfig(bytes.NewReader(data))
		if cerr == nil && int64(cfg.Width)*int64(cfg.Height) > 1<<22 {
			return // image/png would try; VerifyPNG refuses the size first
		}
		if (derr == nil) != (err == nil) {
			t.Fatalf("image/png: %v; VerifyPNG: %v", derr, err)
		}
		if err == nil && (w != cfg.Width || h != cfg.Height) {
			t.Fatalf("VerifyPNG %d×%d, DecodeConfig %d×%d", w, h, cfg.Width, cfg.Height)
		}
		if err != nil && !errors.Is(err, ErrInvalidPNG) && !errors.Is(err, ErrNotPNG) {
			t.Fatalf("unexpected error kind: %v", err)
		}
	})
}

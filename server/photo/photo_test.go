package photo_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"strings"
	"testing"

	"github.com/gardend/gardend/server/photo"
)

// exif is a little- or big-endian TIFF structure with IFD0 holding an orientation,
// a camera make and a pointer to a GPS IFD with a latitude: what a phone writes.
func exif(bo binary.ByteOrder, orientation uint16) []byte {
	var b bytes.Buffer
	if bo == binary.LittleEndian {
		b.WriteString("II*\x00")
	} else {
		b.WriteString("MM\x00*")
	}
	put32 := func(v uint32) { binary.Write(&b, bo, v) }
	put16 := func(v uint16) { binary.Write(&b, bo, v) }
	put32(8)
	// IFD0: Make (ASCII, offset), Orientation (SHORT), GPS IFD pointer (LONG).
	put16(3)
	make := "SecretCam Pro\x00"
	makeOff := uint32(8 + 2 + 3*12 + 4)
	gpsOff := makeOff + uint32(len(make))
	put16(0x010F)
	put16(2)
	put32(uint32(len(make)))
	put32(makeOff)
	put16(0x0112)
	put16(3)
	put32(1)
	put16(orientation)
	put16(0)
	put16(0x8825)
	put16(4)
	put32(1)
	put32(gpsOff)
	put32(0) // no next IFD
	b.WriteString(make)
	// GPS IFD: GPSLatitudeRef "N".
	put16(1)
	put16(0x0001)
	put16(2)
	put32(2)
	b.WriteString("N\x00\x00\x00")
	put32(0)
	return b.Bytes()
}

// corners is a 4×2 picture whose every pixel differs, so that a turn or mirror
// shows.
func corners() *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, 4, 2))
	for y := range 2 {
		for x := range 4 {
			img.SetNRGBA(x, y, color.NRGBA{uint8(40 * x), uint8(100 * y), 200, 255})
		}
	}
	return img
}

// pngWithExif encodes img as PNG with an eXIf chunk (and a tEXt chunk) before IDAT.
func pngWithExif(t testing.TB, img image.Image, tiff []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	raw := buf.Bytes()
	ihdrEnd := 8 + 8 + 13 + 4
	chunk := func(typ string, data []byte) []byte {
		var c bytes.Buffer
		binary.Write(&c, binary.BigEndian, uint32(len(data)))
		c.WriteString(typ)
		c.Write(data)
		binary.Write(&c, binary.BigEndian, crc32.ChecksumIEEE(append([]byte(typ), data...)))
		return c.Bytes()
	}
	out := append([]byte{}, raw[:ihdrEnd]...)
	out = append(out, chunk("tEXt", []byte("Comment\x00secret garden at 52.1N"))...)
	if tiff != nil {
		out = append(out, chunk("eXIf", tiff)...)
	}
	return append(out, raw[ihdrEnd:]...)
}

// jpegWithMetadata encodes img as JPEG with an EXIF APP1 (orientation, make, GPS), an
// XMP APP1, a comment, and data after the end of the image.
func jpegWithMetadata(t testing.TB, img image.Image, tiff []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 95}); err != nil {
		t.Fatal(err)
	}
	raw := buf.Bytes()
	seg := func(marker byte, data []byte) []byte {
		out := []byte{0xFF, marker, 0, 0}
		binary.BigEndian.PutUint16(out[2:], uint16(len(data)+2))
		return append(out, data...)
	}
	out := append([]byte{}, raw[:2]...)
	out = append(out, seg(0xE1, append([]byte("Exif\x00\x00"), tiff...))...)
	out = append(out, seg(0xE1, []byte("http://ns.adobe.com/xap/1.0/\x00<x:xmpmeta>secret location</x:xmpmeta>"))...)
	out = append(out, seg(0xFE, []byte("secret comment"))...)
	out = append(out, raw[2:]...)
	return append(out, []byte("PK\x03\x04secret archive appended")...)
}

// TestOrientations: each EXIF orientation (from PNG eXIf, big- and little-endian)
// turns the picture so that the stored first row and column land where EXIF 2.3 says.
func TestOrientations(t *testing.T) {
	src := corners()
	// Where the stored pixels (0,0) and (3,0) appear: EXIF's table of where the 0th
	// row and column go, as corners of the upright picture.
	type corner struct{ right, bottom bool }
	where := map[int][2]corner{
		1: {{false, false}, {true, false}},
		2: {{true, false}, {false, false}},
		3: {{true, true}, {false, true}},
		4: {{false, true}, {true, true}},
		5: {{false, false}, {false, true}},
		6: {{true, false}, {true, true}},
		7: {{true, true}, {true, false}},
		8: {{false, true}, {false, false}},
	}
	for o := 1; o <= 8; o++ {
		for _, bo := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
			file := pngWithExif(t, src, exif(bo, uint16(o)))
			h, err := photo.ReadHeader(bytes.NewReader(file))
			if err != nil || h.Orientation != o || h.Width != 4 || h.Height != 2 || h.ContentType != photo.PNG {
				t.Fatalf("orientation %d: header %+v, %v", o, h, err)
			}
			var full, thumb bytes.Buffer
			res, err := photo.Process(bytes.NewReader(file), h, 320, &full, &thumb)
			if err != nil {
				t.Fatal(err)
			}
			out, err := png.Decode(&full)
			if err != nil {
				t.Fatal(err)
			}
			b := out.Bounds()
			if b.Dx() != res.Width || b.Dy() != res.Height || (o >= 5) != (b.Dx() == 2) {
				t.Fatalf("orientation %d: %v, result %+v", o, b, res)
			}
			at := func(c corner) color.Color {
				x, y := 0, 0
				if c.right {
					x = b.Dx() - 1
				}
				if c.bottom {
					y = b.Dy() - 1
				}
				return out.At(x, y)
			}
			for i, sx := range []int{0, 3} {
				want := color.NRGBAModel.Convert(src.At(sx, 0))
				if got := color.NRGBAModel.Convert(at(where[o][i])); got != want {
					t.Errorf("orientation %d: stored (%d,0) at %+v is %v, want %v", o, sx, where[o][i], got, want)
				}
			}
			if bytes.Contains(full.Bytes(), []byte("eXIf")) || bytes.Contains(full.Bytes(), []byte("secret")) {
				t.Errorf("orientation %d: metadata kept", o)
			}
		}
	}
}

// TestJPEGMetadataStripped: a phone's JPEG with GPS, camera, XMP, a comment and an
// appended archive is stored upright with none of it.
func TestJPEGMetadataStripped(t *testing.T) {
	img := image.NewYCbCr(image.Rect(0, 0, 64, 48), image.YCbCrSubsampleRatio420)
	for i := range img.Y {
		img.Y[i] = uint8(i)
	}
	file := jpegWithMetadata(t, img, exif(binary.BigEndian, 6))
	h, err := photo.ReadHeader(bytes.NewReader(file))
	if err != nil || h.Orientation != 6 || h.Width != 64 || h.Height != 48 {
		t.Fatalf("header %+v, %v", h, err)
	}
	if want := int64(64*48 + 2*32*24); h.DecodeBytes != want {
		t.Errorf("decode bytes %d, want %d (4:2:0)", h.DecodeBytes, want)
	}
	var full, thumb bytes.Buffer
	res, err := photo.Process(bytes.NewReader(file), h, 320, &full, &thumb)
	if err != nil {
		t.Fatal(err)
	}
	if res.Width != 48 || res.Height != 64 || res.ThumbWidth != 48 || res.ThumbHeight != 64 {
		t.Fatalf("result %+v", res)
	}
	for _, secret := range []string{"Exif", "SecretCam", "secret", "xmpmeta", "PK\x03\x04"} {
		if bytes.Contains(full.Bytes(), []byte(secret)) || bytes.Contains(thumb.Bytes(), []byte(secret)) {
			t.Errorf("%q kept", secret)
		}
	}
	// Only the encoder's segments: SOI, DQT, SOF, DHT, SOS … EOI, nothing after.
	if !bytes.HasSuffix(full.Bytes(), []byte{0xFF, 0xD9}) {
		t.Error("data after the image's end")
	}
	for i := 2; i+4 < len(full.Bytes()); {
		b := full.Bytes()
		if b[i] != 0xFF {
			t.Fatalf("no marker at %d", i)
		}
		m := b[i+1]
		if m >= 0xE0 && m <= 0xEF || m == 0xFE {
			t.Errorf("segment %X kept", m)
		}
		if m == 0xDA {
			break
		}
		i += 2 + int(binary.BigEndian.Uint16(b[i+2:]))
	}
	if _, err := jpeg.Decode(&full); err != nil {
		t.Fatal(err)
	}
}

func TestThumbnail(t *testing.T) {
	big := image.NewNRGBA(image.Rect(0, 0, 4000, 3000))
	th := photo.Thumbnail(big, 320)
	if b := th.Bounds(); b.Dx() != 320 || b.Dy() != 240 {
		t.Fatalf("thumbnail %v", b)
	}
	// Transparent becomes white; a small picture keeps its size.
	if c := th.RGBAAt(10, 10); c != (color.RGBA{255, 255, 255, 255}) {
		t.Fatalf("transparent as %v", c)
	}
	small := corners()
	if b := photo.Thumbnail(small, 320).Bounds(); b.Dx() != 4 || b.Dy() != 2 {
		t.Fatalf("small %v", b)
	}
	tall := image.NewGray(image.Rect(0, 0, 100, 1000))
	if b := photo.Thumbnail(tall, 320).Bounds(); b.Dx() != 32 || b.Dy() != 320 {
		t.Fatalf("tall %v", b)
	}
}

// pngHeaderOnly is a PNG signature and header chunk of the given size and kind.
func pngHeaderOnly(w, h uint32, depth, colour, interlace byte) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	data := make([]byte, 13)
	binary.BigEndian.PutUint32(data, w)
	binary.BigEndian.PutUint32(data[4:], h)
	data[8], data[9], data[12] = depth, colour, interlace
	binary.Write(&b, binary.BigEndian, uint32(13))
	b.WriteString("IHDR")
	b.Write(data)
	binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(append([]byte("IHDR"), data...)))
	binary.Write(&b, binary.BigEndian, uint32(0))
	b.WriteString("IDAT")
	return b.Bytes()
}

// jpegFrameOnly is a JPEG up to a frame header of the given kind and sampling.
func jpegFrameOnly(marker byte, w, h uint16, sampling ...byte) []byte {
	seg := []byte{8, 0, 0, 0, 0, byte(len(sampling))}
	binary.BigEndian.PutUint16(seg[1:], h)
	binary.BigEndian.PutUint16(seg[3:], w)
	for i, s := range sampling {
		seg = append(seg, byte(i+1), s, 0)
	}
	out := []byte{0xFF, 0xD8, 0xFF, marker, 0, 0}
	binary.BigEndian.PutUint16(out[4:], uint16(len(seg)+2))
	return append(out, seg...)
}

// TestLimits: what a decode would cost is known from the header, and a photo past
// the budget is refused with its size and what its kind may have.
func TestLimits(t *testing.T) {
	lim := photo.Limits{MaxPixels: photo.DefaultMaxPixels}
	for _, c := range []struct {
		name  string
		file  []byte
		bytes int64
		ok    bool
		says  string
	}{
		{"48 MP phone JPEG 4:2:0", jpegFrameOnly(0xC0, 8000, 6000, 0x22, 0x11, 0x11), 48_000_000 * 3 / 2, true, ""},
		{"48 MP JPEG 4:4:4", jpegFrameOnly(0xC0, 8000, 6000, 0x11, 0x11, 0x11), 144_000_000, false, "48.0 megapixels); a JPEG may have at most 24.0 megapixels"},
		{"progressive 12 MP", jpegFrameOnly(0xC2, 4000, 3000, 0x22, 0x11, 0x11), 5 * 18_048_000, false, "a progressive JPEG may have at most"}, // 188 rows of 16-pixel MCUs
		{"grey JPEG", jpegFrameOnly(0xC1, 4000, 3000, 0x11), 12_000_000, true, ""},
		{"RGBA PNG 18 MP", pngHeaderOnly(6000, 3000, 8, 6, 0), 72_000_000, true, ""},
		{"RGBA PNG 20 MP", pngHeaderOnly(5000, 4000, 8, 6, 0), 80_000_000, false, "a PNG may have at most 18.0 megapixels"},
		{"16-bit PNG", pngHeaderOnly(4000, 3000, 16, 2, 0), 96_000_000, false, "a 16-bit PNG may have at most 9.0"},
		{"interlaced palette PNG", pngHeaderOnly(4000, 3000, 8, 3, 1), 24_000_000, true, ""},
	} {
		h, err := photo.ReadHeader(bytes.NewReader(c.file))
		if err != nil || h.DecodeBytes != c.bytes {
			t.Errorf("%s: header %+v, %v; want %d bytes", c.name, h, err, c.bytes)
			continue
		}
		err = lim.Check(h)
		if (err == nil) != c.ok || err != nil && (!errors.Is(err, photo.ErrTooLarge) || !strings.Contains(err.Error(), c.says)) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

func TestNotPhotos(t *testing.T) {
	for _, c := range []struct {
		name, file string
		want       error
		says       string
	}{
		{"empty", "", photo.ErrNotPhoto, "empty"},
		{"gif", "GIF89a....", photo.ErrNotPhoto, "GIF"},
		{"heic", "\x00\x00\x00\x18ftypheic", photo.ErrNotPhoto, "HEIC"},
		{"text", "hello world", photo.ErrNotPhoto, "JPEG or PNG"},
		{"jpeg cut short", "\xFF\xD8\xFF\xE1\x10\x00Exif", photo.ErrBadPhoto, "ends before its header"},
		{"jpeg without frame", "\xFF\xD8\xFF\xDA\x00\x02", photo.ErrBadPhoto, "no frame header"},
		{"arithmetic jpeg", string(jpegFrameOnly(0xC9, 10, 10, 0x11)), photo.ErrNotPhoto, "arithmetic"},
		{"png without header", "\x89PNG\r\n\x1a\n\x00\x00\x00\x00IDAT", photo.ErrBadPhoto, "header chunk"},
		{"png bad crc", string(pngHeaderOnly(1, 1, 8, 6, 0)[:29]) + "XXXX", photo.ErrBadPhoto, "checksum"},
		{"png bad depth", string(pngHeaderOnly(1, 1, 3, 6, 0)), photo.ErrBadPhoto, "bit depth"},
		{"png zero size", string(pngHeaderOnly(0, 1, 8, 6, 0)), photo.ErrBadPhoto, "0×1"},
	} {
		_, err := photo.ReadHeader(strings.NewReader(c.file))
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %v saying %q", c.name, err, c.want, c.says)
		}
	}
	// A header that promises more than the data holds fails the decode.
	var buf bytes.Buffer
	png.Encode(&buf, corners())
	cut := buf.Bytes()[:buf.Len()-20]
	h, err := photo.ReadHeader(bytes.NewReader(cut))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := photo.Process(bytes.NewReader(cut), h, 320, &bytes.Buffer{}, &bytes.Buffer{}); !errors.Is(err, photo.ErrBadPhoto) {
		t.Fatalf("truncated PNG: %v", err)
	}
}

func FuzzReadHeader(f *testing.F) {
	f.Add(pngHeaderOnly(4000, 3000, 8, 6, 0))
	f.Add(jpegFrameOnly(0xC2, 4000, 3000, 0x22, 0x11, 0x11))
	var buf bytes.Buffer
	jpeg.Encode(&buf, corners(), nil)
	f.Add(buf.Bytes())
	f.Add([]byte("\xFF\xD8\xFF\xE1\x00\x30Exif\x00\x00MM\x00*\x00\x00\x00\x08\x00\x01\x01\x12\x00\x03\x00\x00\x00\x01\x00\x06\x00\x00"))
	f.Add(hiddenFrame(64, 64))
	f.Add(manyScans(16, 16, 3))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := photo.ReadHeader(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, photo.ErrNotPhoto) && !errors.Is(err, photo.ErrBadPhoto) {
				t.Fatalf("error of no kind: %v", err)
			}
			return
		}
		if h.Width <= 0 || h.Height <= 0 || h.Orientation < 1 || h.Orientation > 8 || h.DecodeBytes < int64(h.Width)*int64(h.Height) {
			t.Fatalf("header %+v", h)
		}
		// The size read is the size the decoder allocates by.
		decodeConfig := jpeg.DecodeConfig
		if h.ContentType == photo.PNG {
			decodeConfig = png.DecodeConfig
		}
		if cfg, err := decodeConfig(bytes.NewReader(data)); err == nil && (cfg.Width != h.Width || cfg.Height != h.Height) {
			t.Fatalf("header %+v, the decoder reads %d×%d", h, cfg.Width, cfg.Height)
		}
		// A header the limits accept decodes or fails cleanly, never panics.
		if (photo.Limits{MaxPixels: 1 << 16}).Check(h) == nil {
			_, err := photo.Process(bytes.NewReader(data), h, 32, &bytes.Buffer{}, &bytes.Buffer{})
			if err != nil && !errors.Is(err, photo.ErrBadPhoto) && !errors.Is(err, photo.ErrNotPhoto) {
				t.Fatalf("process: %v", err)
			}
		}
	})
}

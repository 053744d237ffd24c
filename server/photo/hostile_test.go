package photo_test

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/png"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/gardend/gardend/server/photo"
)

func segment(marker byte, data []byte) []byte {
	out := []byte{0xFF, marker, 0, 0}
	binary.BigEndian.PutUint16(out[2:], uint16(len(data)+2))
	return append(out, data...)
}

// greyFrame is a frame header of a w×h grey picture.
func greyFrame(marker byte, w, h uint16) []byte {
	sof := []byte{8, 0, 0, 0, 0, 1, 1, 0x11, 0}
	binary.BigEndian.PutUint16(sof[1:], h)
	binary.BigEndian.PutUint16(sof[3:], w)
	return segment(marker, sof)
}

// greyTables are a quantisation table and one-code Huffman tables: DC difference 0
// as bit 0, and AC symbol ac as bit 0, so that zero bytes are valid scan data.
func greyTables(ac byte) []byte {
	dht := func(class, sym byte) []byte {
		return append(append([]byte{class << 4, 1}, make([]byte, 15)...), sym)
	}
	out := segment(0xDB, append([]byte{0}, bytes.Repeat([]byte{1}, 64)...))
	out = append(out, segment(0xC4, dht(0, 0))...)
	return append(out, segment(0xC4, dht(1, ac))...)
}

func blocks(w, h uint16) int { return (int(w) + 7) / 8 * ((int(h) + 7) / 8) }

// hiddenFrame is a grey JPEG of w×h whose frame header a reader that takes
// "\xFF\x00" for a segment does not see: such a reader skips 65,503 bytes and finds
// a 16×16 frame header, which the decoder reads inside an APP1 segment it skips.
func hiddenFrame(w, h uint16) []byte {
	var b bytes.Buffer
	b.Write([]byte{0xFF, 0xD8})
	b.Write([]byte{0xFF, 0x00, 0xFF, 0xE1, 0xFF, 0xFF})
	app1 := make([]byte, 0xFFFF-2)
	copy(app1[6+0xFFE1-2-8:], greyFrame(0xC0, 16, 16))
	b.Write(app1)
	b.Write(greyFrame(0xC0, w, h))
	b.Write(greyTables(0))
	b.Write(segment(0xDA, []byte{1, 1, 0, 0, 63, 0}))
	b.Write(make([]byte, blocks(w, h)*2/8+16)) // each block: DC 0, end of block
	b.Write([]byte{0xFF, 0xD9})
	return b.Bytes()
}

// manyScans is a progressive grey JPEG of w×h with a DC scan and then n scans of
// its AC band, each a few end-of-band runs (15 bits for 16,384 blocks).
func manyScans(w, h uint16, n int) []byte {
	var b bytes.Buffer
	b.Write([]byte{0xFF, 0xD8})
	b.Write(greyFrame(0xC2, w, h))
	b.Write(greyTables(0xE0))
	b.Write(segment(0xDA, []byte{1, 1, 0, 0, 0, 0}))
	b.Write(make([]byte, blocks(w, h)/8+8))
	for range n {
		b.Write(segment(0xDA, []byte{1, 1, 0, 1, 63, 0}))
		b.Write(make([]byte, (blocks(w, h)/16384+1)*15/8+2))
	}
	b.Write([]byte{0xFF, 0xD9})
	return b.Bytes()
}

// TestHiddenFrameHeader: the size checked is the size the decoder allocates by. A
// 1.6 MB file that showed the check 16×16 pixels made the decoder allocate 381 MiB
// for 20,000×20,000 (a 16 MiB one, 4 GiB).
func TestHiddenFrameHeader(t *testing.T) {
	file := hiddenFrame(20000, 20000)
	h, err := photo.ReadHeader(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if h.Width != 20000 || h.Height != 20000 {
		t.Fatalf("header %+v: not the frame the decoder reads", h)
	}
	if err := (photo.Limits{MaxPixels: photo.DefaultMaxPixels}).Check(h); !errors.Is(err, photo.ErrTooLarge) {
		t.Fatalf("check: %v", err)
	}
}

// TestHugePNGHeaderChunk: an IHDR longer than the chunks the walk reads was
// skipped whole, and the check passed a picture of no size (0×0, nothing to
// decode) on to the decoder.
func TestHugePNGHeaderChunk(t *testing.T) {
	ihdr := make([]byte, 13+2<<20)
	binary.BigEndian.PutUint32(ihdr, 20000)
	binary.BigEndian.PutUint32(ihdr[4:], 20000)
	ihdr[8], ihdr[9] = 8, 6
	var c bytes.Buffer
	c.WriteString("\x89PNG\r\n\x1a\n")
	binary.Write(&c, binary.BigEndian, uint32(len(ihdr)))
	c.WriteString("IHDR")
	c.Write(ihdr)
	binary.Write(&c, binary.BigEndian, crc32.ChecksumIEEE(append([]byte("IHDR"), ihdr...)))
	c.Write([]byte{0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xAE, 0x42, 0x60, 0x82})
	h, err := photo.ReadHeader(bytes.NewReader(c.Bytes()))
	if !errors.Is(err, photo.ErrBadPhoto) || !strings.Contains(err.Error(), "header chunk") {
		t.Fatalf("header %+v, %v; want a damaged PNG", h, err)
	}
}

// TestDecodeRefusesAnotherSize: given a header that says less than the file holds,
// Process refuses before the decoder allocates the picture.
func TestDecodeRefusesAnotherSize(t *testing.T) {
	file := hiddenFrame(8000, 8000) // 61 MiB of grey
	forged := photo.Header{ContentType: photo.JPEG, Width: 16, Height: 16, Orientation: 1, DecodeBytes: 256, Kind: "a JPEG"}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := photo.Process(bytes.NewReader(file), forged, 320, io.Discard, io.Discard)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, photo.ErrBadPhoto) || !strings.Contains(err.Error(), "disagree") {
		t.Fatalf("process: %v", err)
	}
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 16<<20 {
		t.Fatalf("allocated %d MiB before refusing", grown>>20)
	}
}

// TestScanLimit: each scan of a progressive JPEG visits every block again (12 ms a
// scan at the size the limits allow, so 16 MiB of scans kept a core busy for over an
// hour); more than MaxScans are refused before decoding.
func TestScanLimit(t *testing.T) {
	ok := manyScans(64, 64, photo.MaxScans-1) // with the DC scan: MaxScans
	h, err := photo.ReadHeader(bytes.NewReader(ok))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := photo.Process(bytes.NewReader(ok), h, 320, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	_, err = photo.ReadHeader(bytes.NewReader(manyScans(64, 64, photo.MaxScans)))
	if !errors.Is(err, photo.ErrBadPhoto) || !strings.Contains(err.Error(), "more than 100 scans") {
		t.Fatalf("%d scans: %v", photo.MaxScans+1, err)
	}
}

// craftedJPEG is a JPEG of w×h whose components have the given identifiers and
// sampling factors (0xHV), baseline or progressive (one DC scan), with an APP14
// (Adobe) segment of the given transform if adobe ≥ 0, every block zero.
func craftedJPEG(w, h uint16, progressive bool, adobe int, ids string, sampling ...byte) []byte {
	var b bytes.Buffer
	b.Write([]byte{0xFF, 0xD8})
	if adobe >= 0 {
		b.Write(segment(0xEE, []byte{'A', 'd', 'o', 'b', 'e', 0, 100, 0, 0, 0, 0, byte(adobe)}))
	}
	sof := []byte{8, 0, 0, 0, 0, byte(len(sampling))}
	binary.BigEndian.PutUint16(sof[1:], h)
	binary.BigEndian.PutUint16(sof[3:], w)
	maxH, maxV, perMCU := 1, 1, 0
	for i, s := range sampling {
		sof = append(sof, ids[i], s, 0)
		maxH, maxV = max(maxH, int(s>>4)), max(maxV, int(s&15))
		perMCU += int(s>>4) * int(s&15)
	}
	if len(sampling) == 1 {
		maxH, maxV, perMCU = 1, 1, 1
	}
	marker := byte(0xC0)
	if progressive {
		marker = 0xC2
	}
	b.Write(segment(marker, sof))
	b.Write(greyTables(0))
	sos := []byte{byte(len(sampling))}
	for i := range sampling {
		sos = append(sos, ids[i], 0)
	}
	if progressive {
		sos = append(sos, 0, 0, 0)
	} else {
		sos = append(sos, 0, 63, 0)
	}
	b.Write(segment(0xDA, sos))
	mcus := (int(w) + 8*maxH - 1) / (8 * maxH) * ((int(h) + 8*maxV - 1) / (8 * maxV))
	b.Write(make([]byte, mcus*perMCU*2/8+16))
	b.Write([]byte{0xFF, 0xD9})
	return b.Bytes()
}

// withChunk puts a chunk into a PNG after its header chunk.
func withChunk(file []byte, typ string, data []byte) []byte {
	var c bytes.Buffer
	binary.Write(&c, binary.BigEndian, uint32(len(data)))
	c.WriteString(typ)
	c.Write(data)
	binary.Write(&c, binary.BigEndian, crc32.ChecksumIEEE(append([]byte(typ), data...)))
	at := 8 + 8 + 13 + 4
	return append(append(append([]byte{}, file[:at]...), c.Bytes()...), file[at:]...)
}

func encodePNG(t *testing.T, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// interlacedGrey is an interlaced (Adam7) 8-bit grey PNG of w×h, all black.
func interlacedGrey(w, h int) []byte {
	var raw bytes.Buffer
	for _, p := range [][4]int{{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4}, {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}} {
		pw, ph := (w-p[0]+p[2]-1)/p[2], (h-p[1]+p[3]-1)/p[3]
		if pw <= 0 || ph <= 0 {
			continue
		}
		raw.Write(make([]byte, ph*(pw+1)))
	}
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(raw.Bytes())
	zw.Close()
	chunk := func(typ string, data []byte) []byte {
		var c bytes.Buffer
		binary.Write(&c, binary.BigEndian, uint32(len(data)))
		c.WriteString(typ)
		c.Write(data)
		binary.Write(&c, binary.BigEndian, crc32.ChecksumIEEE(append([]byte(typ), data...)))
		return c.Bytes()
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr, uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[12] = 8, 1
	out := []byte("\x89PNG\r\n\x1a\n")
	out = append(out, chunk("IHDR", ihdr)...)
	out = append(out, chunk("IDAT", z.Bytes())...)
	return append(out, chunk("IEND", nil)...)
}

// TestDecodeBytesCoverDecoding: what the limits are checked against is at least
// what image/jpeg and image/png allocate for each kind of picture. Transparent grey
// PNGs (decoded as NRGBA: 4 times the estimate), RGB JPEGs (converted into RGBA)
// and uncommon sampling (decoded full size) took up to 4 times the budget.
func TestDecodeBytesCoverDecoding(t *testing.T) {
	const w, h = 1024, 768
	grey16 := image.NewGray16(image.Rect(0, 0, w, h))
	opaque := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := 3; i < len(opaque.Pix); i += 4 {
		opaque.Pix[i] = 255
	}
	for _, c := range []struct {
		name string
		file []byte
	}{
		{"grey JPEG", craftedJPEG(w, h, false, -1, "\x01", 0x11)},
		{"4:2:0 JPEG", craftedJPEG(w, h, false, -1, "\x01\x02\x03", 0x22, 0x11, 0x11)},
		{"4:2:0 progressive JPEG", craftedJPEG(w, h, true, -1, "\x01\x02\x03", 0x22, 0x11, 0x11)},
		{"RGB JPEG", craftedJPEG(w, h, false, -1, "RGB", 0x11, 0x11, 0x11)},
		{"Adobe RGB JPEG", craftedJPEG(w, h, false, 0, "\x01\x02\x03", 0x11, 0x11, 0x11)},
		{"chroma sampled more than luma", craftedJPEG(w, h, false, -1, "\x01\x02\x03", 0x11, 0x22, 0x22)},
		{"Cb and Cr sampled apart", craftedJPEG(w, h, true, -1, "\x01\x02\x03", 0x22, 0x11, 0x21)},
		{"RGB 4:2:0 progressive JPEG", craftedJPEG(w, h, true, -1, "RGB", 0x22, 0x11, 0x11)},
		{"CMYK JPEG", craftedJPEG(w, h, false, 0, "\x01\x02\x03\x04", 0x11, 0x11, 0x11, 0x11)},
		{"YCCK JPEG", craftedJPEG(w, h, true, 2, "\x01\x02\x03\x04", 0x22, 0x11, 0x11, 0x22)},
		{"grey PNG", encodePNG(t, image.NewGray(image.Rect(0, 0, w, h)))},
		{"transparent grey PNG", withChunk(encodePNG(t, image.NewGray(image.Rect(0, 0, w, h))), "tRNS", []byte{0, 0})},
		{"transparent 16-bit grey PNG", withChunk(encodePNG(t, grey16), "tRNS", []byte{0, 0})},
		{"transparent RGB PNG", withChunk(encodePNG(t, opaque), "tRNS", []byte{0, 0, 0, 0, 0, 0})},
		{"interlaced transparent grey PNG", withChunk(interlacedGrey(w, h), "tRNS", []byte{0, 0})},
	} {
		hd, err := photo.ReadHeader(bytes.NewReader(c.file))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err = photo.Decode(bytes.NewReader(c.file), hd)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		// Besides the picture: the header read twice, buffers.
		const besides = 256 << 10
		if grown := int64(after.TotalAlloc - before.TotalAlloc); grown > hd.DecodeBytes+besides {
			t.Errorf("%s: decoding took %d bytes, more than the %d estimated", c.name, grown-besides, hd.DecodeBytes)
		}
	}
}

package imagestore

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"runtime"
	"strings"
	"testing"
)

func TestCheckPNG(t *testing.T) {
	valid := readFixture(t, fixturePNG)
	tests := []struct {
		name    string
		in      []byte
		w, h    int
		wantErr error
		detail  string // part of the message
	}{
		{"rgba", valid, fixtureW, fixtureH, nil, ""},
		{"paletted", readFixture(t, fixturePaletted), 16, 8, nil, ""},
		{"header only is enough", pngWithIHDR(3, 2), 3, 2, nil, ""},

		{"jpeg", readFixture(t, fixtureJPEG), 0, 0, ErrNotPNG, "JPEG"},
		{"gif", readFixture(t, fixtureGIF), 0, 0, ErrNotPNG, "GIF"},
		{"webp", []byte("RIFF\x00\x00\x00\x00WEBPVP8 "), 0, 0, ErrNotPNG, "WebP"},
		{"text named .png", readFixture(t, fixtureText), 0, 0, ErrNotPNG, "signature"},
		{"empty", nil, 0, 0, ErrNotPNG, "empty"},
		{"partial signature", []byte(pngSignature[:5]), 0, 0, ErrNotPNG, "signature"},

		{"signature only", []byte(pngSignature), 0, 0, ErrInvalidPNG, "truncated"},
		{"truncated header", valid[:20], 0, 0, ErrInvalidPNG, "truncated"},
		{"zero width", readFixture(t, fixtureZeroW), 0, 0, ErrInvalidPNG, "dimension"},
		{"zero height", pngWithIHDR(10, 0), 0, 0, ErrInvalidPNG, "dimension"},
		{"negative width", pngWithIHDR(1<<31, 1), 0, 0, ErrInvalidPNG, "dimension"},
		{"bad checksum", corrupt(valid, 29), 0, 0, ErrInvalidPNG, "checksum"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, h, err := CheckPNG(tc.in)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), tc.detail) {
				t.Errorf("message %q does not mention %q", err, tc.detail)
			}
			if w != tc.w || h != tc.h {
				t.Errorf("size %dx%d, want %dx%d", w, h, tc.w, tc.h)
			}
		})
	}
}

// corrupt returns a copy of b with byte i flipped.
func corrupt(b []byte, i int) []byte {
	c := append([]byte(nil), b...)
	c[i] ^= 0xFF
	return c
}

// TestCheckPNGAllocationBounded feeds a paletted PNG whose PLTE follows a 16 MiB
// ancillary chunk, which DecodeConfig must read past: memory use stays constant.
func TestCheckPNGAllocationBounded(t *testing.T) {
	small := readFixture(t, fixturePaletted)
	const ihdrEnd = 8 + 8 + 13 + 4 // signature, IHDR length+type, data, CRC
	big := append([]byte(nil), small[:ihdrEnd]...)
	big = append(big, chunk("tEXt", make([]byte, 16<<20))...)
	big = append(big, small[ihdrEnd:]...)

	for _, in := range [][]byte{small, big} {
		if w, h, err := CheckPNG(in); err != nil || w != 16 || h != 8 {
			t.Fatalf("CheckPNG = %d, %d, %v", w, h, err)
		}
	}
	const runs = 10
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		CheckPNG(big)
	}
	runtime.ReadMemStats(&after)
	if perOp := (after.TotalAlloc - before.TotalAlloc) / runs; perOp > 64<<10 {
		t.Errorf("CheckPNG allocated %d bytes for a %d-byte PNG", perOp, len(big))
	}
}

// chunk encodes one PNG chunk.
func chunk(typ string, data []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
	b = append(b, typ...)
	b = append(b, data...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b[4:]))
}

package imagestore

import (
	"errors"
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

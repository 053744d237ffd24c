package imagestore

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

// Seed corpora live in testdata/fuzz; these f.Add calls add the fixtures.

func FuzzDecodeDataURL(f *testing.F) {
	for _, name := range []string{fixturePNG, fixtureJPEG, fixtureText, fixtureZeroW} {
		b := readFixture(f, name)
		f.Add(DataURLPrefix + base64.StdEncoding.EncodeToString(b))
		f.Add(DataURLPrefix + base64.RawStdEncoding.EncodeToString(b))
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := DecodeDataURL(s)
		if err != nil {
			if b != nil {
				t.Fatal("bytes returned with an error")
			}
			if !errors.Is(err, ErrBadDataURL) && !errors.Is(err, ErrNotPNG) && !errors.Is(err, ErrBadBase64) {
				t.Fatalf("error without a sentinel: %v", err)
			}
			return
		}
		if len(b) == 0 {
			t.Fatal("empty result without an error")
		}
		// Nothing is accepted beyond base64, CR/LF and padding: the data minus those
		// has exactly the length that encodes len(b) bytes. That also bounds the
		// allocation by the input.
		payload := s[strings.IndexByte(s, ',')+1:]
		core := strings.NewReplacer("\r", "", "\n", "", "=", "").Replace(payload)
		if len(core) != base64.RawStdEncoding.EncodedLen(len(b)) {
			t.Fatalf("%d base64 characters decoded to %d bytes", len(core), len(b))
		}
		if cap(b) > base64.RawStdEncoding.DecodedLen(len(payload)) {
			t.Fatalf("allocated %d bytes for %d characters", cap(b), len(payload))
		}
		checkPNGInvariants(t, b)
	})
}

func FuzzCheckPNG(f *testing.F) {
	for _, name := range []string{fixturePNG, fixturePaletted, fixtureJPEG, fixtureGIF, fixtureText, fixtureZeroW} {
		f.Add(readFixture(f, name))
	}
	f.Fuzz(checkPNGInvariants)
}

// checkPNGInvariants runs CheckPNG and checks what it promises for any input.
func checkPNGInvariants(t *testing.T, b []byte) {
	w, h, err := CheckPNG(b)
	switch {
	case err == nil:
		if w <= 0 || h <= 0 || !strings.HasPrefix(string(b), pngSignature) {
			t.Fatalf("accepted %d×%d", w, h)
		}
	case errors.Is(err, ErrNotPNG):
		if strings.HasPrefix(string(b), pngSignature) {
			t.Fatalf("ErrNotPNG for bytes with the signature: %v", err)
		}
	case errors.Is(err, ErrInvalidPNG):
		if w != 0 || h != 0 {
			t.Fatalf("size %d×%d with an error", w, h)
		}
	default:
		t.Fatalf("error without a sentinel: %v", err)
	}
}

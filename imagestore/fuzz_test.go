package imagestore

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
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

// FuzzDataURLWriter checks the streaming decoder against DecodeDataURL (same bytes or
// the same error, in any pieces), and both against encoding/base64's own rule for the
// data: with '=' anywhere StdEncoding, else RawStdEncoding.
func FuzzDataURLWriter(f *testing.F) {
	for _, name := range []string{fixturePNG, fixtureText} {
		b := readFixture(f, name)
		f.Add(DataURLPrefix+base64.StdEncoding.EncodeToString(b), uint8(7))
		f.Add(DataURLPrefix+base64.RawStdEncoding.EncodeToString(b), uint8(1))
	}
	f.Add(DataURLPrefix+"QQ=\r\n=", uint8(3))
	f.Add(DataURLPrefix+"QUJD\nQQ", uint8(2))
	f.Fuzz(func(t *testing.T, s string, piece uint8) {
		want, wantErr := DecodeDataURL(s)
		got, err := decodeInPieces(s, []int{int(piece), int(piece)/3 + 1})
		if fmt.Sprint(err) != fmt.Sprint(wantErr) || !bytes.Equal(got, want) {
			t.Fatalf("pieces of %d: %d bytes, %v; DecodeDataURL: %d bytes, %v", piece, len(got), err, len(want), wantErr)
		}
		if !strings.HasPrefix(s, DataURLPrefix) {
			return
		}
		payload := s[len(DataURLPrefix):]
		enc := base64.RawStdEncoding
		if strings.Contains(payload, "=") {
			enc = base64.StdEncoding
		}
		ref, refErr := enc.DecodeString(payload)
		if refErr == nil && len(ref) == 0 {
			refErr = ErrBadDataURL
		}
		if (refErr == nil) != (wantErr == nil) || (refErr == nil && !bytes.Equal(ref, want)) {
			t.Fatalf("encoding/base64: %d bytes, %v; DecodeDataURL: %d bytes, %v", len(ref), refErr, len(want), wantErr)
		}
	})
}

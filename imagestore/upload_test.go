package imagestore

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// uploadInPieces runs text through an Upload in pieces of size n and commits it.
func uploadInPieces(t *testing.T, s *Store, text string, n int) (rel string, w, h int, err error) {
	t.Helper()
	u, err := s.NewUpload()
	if err != nil {
		t.Fatal(err)
	}
	defer u.Abort()
	for p := text; len(p) > 0; {
		k := min(len(p), n)
		if m, err := u.Write([]byte(p[:k])); err != nil || m != k {
			t.Fatalf("Write: %d, %v", m, err)
		}
		p = p[k:]
	}
	if w, h, err = u.Finish(); err != nil {
		return "", 0, 0, err
	}
	rel, err = u.Commit()
	return rel, w, h, err
}

// TestUploadMatchesDecodeAndCheck expects an Upload to accept what DecodeDataURL and
// then CheckPNG accept, store the same bytes, and otherwise fail with the error the
// first of those two gives.
func TestUploadMatchesDecodeAndCheck(t *testing.T) {
	s := mustOpen(t)
	png := readFixture(t, fixturePNG)
	enc := func(b []byte) string { return DataURLPrefix + base64.StdEncoding.EncodeToString(b) }
	inputs := map[string]string{
		"png":                 enc(png),
		"paletted":            enc(readFixture(t, fixturePaletted)),
		"wrapped":             DataURLPrefix + wrap(base64.RawStdEncoding.EncodeToString(png), 76, "\r\n"),
		"jpeg":                enc(readFixture(t, fixtureJPEG)),
		"gif":                 enc(readFixture(t, fixtureGIF)),
		"webp":                enc([]byte("RIFF\x00\x00\x00\x00WEBPVP8 ")),
		"text":                enc(readFixture(t, fixtureText)),
		"zero width":          enc(readFixture(t, fixtureZeroW)),
		"signature only":      enc([]byte(pngSignature)),
		"short":               enc([]byte("\x89PN")),
		"truncated header":    enc(png[:20]),
		"jpeg, bad base64":    enc(readFixture(t, fixtureJPEG)) + "*",
		"jpeg, bad padding":   enc(readFixture(t, fixtureJPEG)) + "=",
		"png, bad base64":     enc(png)[:200] + "-" + enc(png)[200:],
		"no data":             DataURLPrefix,
		"jpeg media type":     "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(png),
		"not a data URL":      base64.StdEncoding.EncodeToString(png),
		"only line breaks":    DataURLPrefix + "\r\n\r\n",
		"truncated base64":    enc(png)[:len(enc(png))-2] + "Q",
		"damaged pixels pass": enc(append(bytes.Clone(png[:60]), bytes.Repeat([]byte{0}, 500)...)),
	}
	for name, text := range inputs {
		t.Run(name, func(t *testing.T) {
			want, wantErr := DecodeDataURL(text)
			var ww, wh int
			if wantErr == nil {
				ww, wh, wantErr = CheckPNG(want)
			}
			for _, n := range []int{1, 3, 100, 1 << 20} {
				rel, w, h, err := uploadInPieces(t, s, text, n)
				if fmt.Sprint(err) != fmt.Sprint(wantErr) {
					t.Fatalf("pieces of %d: error %v, want %v", n, err, wantErr)
				}
				if err != nil {
					continue
				}
				got, _ := os.ReadFile(filepath.Join(filepath.Dir(s.dir), rel))
				if !bytes.Equal(got, want) || w != ww || h != wh {
					t.Fatalf("pieces of %d: stored %d bytes %d×%d, want %d bytes %d×%d", n, len(got), w, h, len(want), ww, wh)
				}
				if err := s.Remove(rel); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	if names := dirNames(t, s); len(names) != 0 {
		t.Errorf("files left behind: %v", names)
	}
}

// TestUploadStopsWritingNonPNG: once the first bytes are not a PNG, nothing more goes
// to disk, while the text is still checked to its end.
func TestUploadStopsWritingNonPNG(t *testing.T) {
	s := mustOpen(t)
	u, err := s.NewUpload()
	if err != nil {
		t.Fatal(err)
	}
	defer u.Abort()
	jpeg := append([]byte("\xff\xd8\xff\xe0"), bytes.Repeat([]byte{7}, 1<<20)...)
	u.Write([]byte(DataURLPrefix + base64.StdEncoding.EncodeToString(jpeg)))
	if u.Size() > sniffLen+decodeChunk {
		t.Errorf("%d bytes written for a JPEG", u.Size())
	}
	if _, _, err := u.Finish(); !errors.Is(err, ErrNotPNG) || !strings.Contains(err.Error(), "JPEG") {
		t.Errorf("Finish: %v", err)
	}
	if _, err := u.Commit(); err == nil {
		t.Error("Commit after a failed Finish succeeded")
	}
	if names := dirNames(t, s); len(names) != 0 {
		t.Errorf("files left behind: %v", names)
	}
}

func TestUploadDiskError(t *testing.T) {
	s := mustOpen(t)
	u, err := s.NewUpload()
	if err != nil {
		t.Fatal(err)
	}
	u.file.f.Close() // the disk goes away under the upload
	if _, err := u.Write([]byte(DataURLPrefix + base64.StdEncoding.EncodeToString(readFixture(t, fixturePNG)))); err == nil || errors.Is(err, ErrBadBase64) {
		t.Fatalf("Write on a closed file: %v", err)
	}
	if _, _, err := u.Finish(); err == nil {
		t.Fatal("Finish after a disk error succeeded")
	}
	u.Abort()
	if names := dirNames(t, s); len(names) != 0 {
		t.Errorf("files left behind: %v", names)
	}
}

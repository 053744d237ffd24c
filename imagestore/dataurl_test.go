package imagestore

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestDecodeDataURL(t *testing.T) {
	pngBytes := readFixture(t, fixturePNG)
	padded := base64.StdEncoding.EncodeToString(pngBytes)
	raw := base64.RawStdEncoding.EncodeToString(pngBytes)
	if padded == raw {
		t.Fatal("fixture length is a multiple of 3: padding cases would test nothing")
	}
	wrapped := wrap(padded, 76, "\r\n")

	tests := []struct {
		name    string
		in      string
		want    []byte // when err is nil
		wantErr error
	}{
		{"padded", DataURLPrefix + padded, pngBytes, nil},
		{"unpadded", DataURLPrefix + raw, pngBytes, nil},
		{"upper-case prefix", "DATA:IMAGE/PNG;BASE64," + padded, pngBytes, nil},
		{"MIME line breaks", DataURLPrefix + wrapped, pngBytes, nil},
		{"LF line breaks unpadded", DataURLPrefix + wrap(raw, 60, "\n"), pngBytes, nil},
		{"any bytes: decoding does not check PNG", DataURLPrefix + "QUJD", []byte("ABC"), nil},

		{"empty string", "", nil, ErrBadDataURL},
		{"missing prefix", padded, nil, ErrBadDataURL},
		{"no comma", "data:image/png;base64", nil, ErrBadDataURL},
		{"not base64", "data:image/png," + padded, nil, ErrBadDataURL},
		{"media-type parameter", "data:image/png;name=a.png;base64," + padded, nil, ErrBadDataURL},
		{"empty data", DataURLPrefix, nil, ErrBadDataURL},
		{"only line breaks", DataURLPrefix + "\r\n", nil, ErrBadDataURL},
		{"jpeg media type", "data:image/jpeg;base64," + padded, nil, ErrNotPNG},
		{"default media type", "data:;base64," + padded, nil, ErrNotPNG},
		{"space in media type", "data: image/png;base64," + padded, nil, ErrNotPNG},

		{"truncated", DataURLPrefix + raw[:len(raw)-len(raw)%4] + "Q", nil, ErrBadBase64},
		{"truncated padded", DataURLPrefix + padded[:len(padded)-1], nil, ErrBadBase64},
		{"excess padding", DataURLPrefix + "QUJD=", nil, ErrBadBase64},
		{"short padding", DataURLPrefix + "QQ=", nil, ErrBadBase64},
		{"padding in the middle", DataURLPrefix + "QQ==QUJD", nil, ErrBadBase64},
		{"URL alphabet", DataURLPrefix + "-_-_", nil, ErrBadBase64},
		{"space", DataURLPrefix + "QUJD QUJD", nil, ErrBadBase64},
		{"tab", DataURLPrefix + "QUJD\tQUJD", nil, ErrBadBase64},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeDataURL(tc.in)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				if got != nil {
					t.Errorf("returned %d bytes with the error", len(got))
				}
				return
			}
			if !bytes.Equal(got, tc.want) {
				t.Errorf("decoded %d bytes, want %d", len(got), len(tc.want))
			}
		})
	}
}

// TestDecodeDataURLMessages checks that details tell a client what to fix.
func TestDecodeDataURLMessages(t *testing.T) {
	tests := []struct{ in, want string }{
		{"hello", `invalid data URL: the image must start with "data:image/png;base64,"`},
		{"data:image/jpeg;base64,QUJD", `only PNG is supported: the data URL declares "image/jpeg"; it must start with "data:image/png;base64,"`},
		{DataURLPrefix, `invalid data URL: no image data after "data:image/png;base64,"`},
		{DataURLPrefix + "QUJD*", "invalid base64: bad character, bad padding or truncated data at byte 4 of the image data (standard alphabet, padding optional)"},
		{"data:" + strings.Repeat("x", 100) + ";base64,", `only PNG is supported: the data URL declares "` + strings.Repeat("x", maxEcho) + `…"; it must start with "data:image/png;base64,"`},
	}
	for _, tc := range tests {
		_, err := DecodeDataURL(tc.in)
		if err == nil || err.Error() != tc.want {
			t.Errorf("DecodeDataURL(%.20q…):\n got %v\nwant %s", tc.in, err, tc.want)
		}
	}
}

// TestDecodeDataURLAllocs pins the promise of one allocation of the decoded size.
func TestDecodeDataURLAllocs(t *testing.T) {
	in := DataURLPrefix + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 1<<20))
	allocs := testing.AllocsPerRun(5, func() {
		if _, err := DecodeDataURL(in); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 1 {
		t.Errorf("%v allocations, want 1", allocs)
	}
}

func wrap(s string, width int, eol string) string {
	var b strings.Builder
	for len(s) > width {
		b.WriteString(s[:width] + eol)
		s = s[width:]
	}
	b.WriteString(s + eol)
	return b.String()
}

func TestEncodedLen(t *testing.T) {
	for _, size := range []int{0, 1, 2, 3, 4, readChunk - 1, readChunk, readChunk + 1, 3*readChunk + 2} {
		data := bytes.Repeat([]byte{0xAB}, size)
		var out bytes.Buffer
		if err := WriteDataURL(&out, bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
		if got := EncodedLen(int64(size)); got != int64(out.Len()) {
			t.Errorf("EncodedLen(%d) = %d, WriteDataURL wrote %d", size, got, out.Len())
		}
	}
}

func TestWriteDataURL(t *testing.T) {
	// Sizes around the chunk boundary, where a wrong split would add padding in the
	// middle; readers that return little at a time, or data with the final EOF.
	readers := map[string]func([]byte) io.Reader{
		"bytes":   func(b []byte) io.Reader { return bytes.NewReader(b) },
		"onebyte": func(b []byte) io.Reader { return iotest.OneByteReader(bytes.NewReader(b)) },
		"half":    func(b []byte) io.Reader { return iotest.HalfReader(bytes.NewReader(b)) },
		"dataeof": func(b []byte) io.Reader { return iotest.DataErrReader(bytes.NewReader(b)) },
	}
	for _, size := range []int{0, 1, 2, readChunk - 1, readChunk, readChunk + 1, 2*readChunk + 1} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(i * 7)
		}
		want := DataURLPrefix + base64.StdEncoding.EncodeToString(data)
		for name, mk := range readers {
			var out strings.Builder
			if err := WriteDataURL(&out, mk(data)); err != nil {
				t.Fatalf("size %d, %s: %v", size, name, err)
			}
			if out.String() != want {
				t.Errorf("size %d, %s: output differs from EncodeToString", size, name)
			}
		}
	}
}

func TestWriteDataURLErrors(t *testing.T) {
	errRead := errors.New("disk gone")
	r := io.MultiReader(bytes.NewReader(make([]byte, 10)), iotest.ErrReader(errRead))
	if err := WriteDataURL(io.Discard, r); !errors.Is(err, errRead) {
		t.Errorf("read error: got %v", err)
	}

	errWrite := errors.New("client went away")
	w := writerFunc(func([]byte) (int, error) { return 0, errWrite })
	if err := WriteDataURL(w, bytes.NewReader(make([]byte, 10))); err != errWrite {
		t.Errorf("write error: got %v, want it unwrapped", err)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// decodeInPieces runs s through a DataURLWriter in pieces of the given sizes (cycled).
func decodeInPieces(s string, sizes []int) ([]byte, error) {
	var out bytes.Buffer
	d := NewDataURLWriter(&out)
	for i := 0; len(s) > 0; i++ {
		n := len(s)
		if len(sizes) > 0 {
			n = min(n, max(1, sizes[i%len(sizes)]))
		}
		if _, err := d.Write([]byte(s[:n])); err != nil {
			return nil, err
		}
		s = s[n:]
	}
	if err := d.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// TestDataURLWriterMatchesDecode feeds every DecodeDataURL case through the streaming
// decoder, whole and in pieces of several sizes: same bytes or the same error text.
func TestDataURLWriterMatchesDecode(t *testing.T) {
	pngBytes := readFixture(t, fixturePNG)
	padded := base64.StdEncoding.EncodeToString(pngBytes)
	raw := base64.RawStdEncoding.EncodeToString(pngBytes)
	inputs := []string{
		"", "d", "data", "data:", "hello", "dat,a", "data:image/png;base64",
		DataURLPrefix, DataURLPrefix + "\r\n", DataURLPrefix + "=", DataURLPrefix + "Q",
		DataURLPrefix + padded, DataURLPrefix + raw, "DATA:IMAGE/PNG;BASE64," + padded,
		DataURLPrefix + wrap(padded, 76, "\r\n"), DataURLPrefix + wrap(raw, 60, "\n"),
		DataURLPrefix + wrap(padded, 75, "\n"), DataURLPrefix + "QQ=\n=", DataURLPrefix + "QQ==\r\n",
		DataURLPrefix + "QUJD=", DataURLPrefix + "QQ=", DataURLPrefix + "QQ==QUJD", DataURLPrefix + "QUJD*",
		DataURLPrefix + "-_-_", DataURLPrefix + "QUJD QUJD", DataURLPrefix + padded[:len(padded)-1],
		"data:image/jpeg;base64," + padded, "data:;base64,QUJD", "data: image/png;base64,QUJD",
		"data:image/png," + padded, "data:image/png;name=a.png;base64,QUJD",
		"data:" + strings.Repeat("x", 300) + ";base64,QUJD", "data:" + strings.Repeat("x", 300),
		"data:image/png;" + strings.Repeat("b", 300) + ",QUJD", "data:image/png;base64" + strings.Repeat("4", 200) + ",QUJD",
		"data:image/png" + strings.Repeat(";", 200) + ",QUJD",
	}
	for _, in := range inputs {
		want, wantErr := DecodeDataURL(in)
		for _, sizes := range [][]int{nil, {1}, {2, 3}, {7}, {5, 1, 64}, {4096}} {
			got, err := decodeInPieces(in, sizes)
			if fmt.Sprint(err) != fmt.Sprint(wantErr) || !bytes.Equal(got, want) {
				t.Errorf("%.40q in pieces %v:\n got %d bytes, %v\nwant %d bytes, %v", in, sizes, len(got), err, len(want), wantErr)
			}
		}
	}
}

// TestDataURLWriterBoundsMemory decodes 4 MiB in 256 KiB writes and checks that the
// decoder allocates a fixed amount, whatever the size.
func TestDataURLWriterBoundsMemory(t *testing.T) {
	data := bytes.Repeat([]byte{1, 2, 3, 4, 5, 6, 7}, (4<<20)/7)
	text := []byte(DataURLPrefix + base64.StdEncoding.EncodeToString(data))
	var n countWriter
	// Several runs: AllocsPerRun counts the whole process's allocations, and a
	// parallel test's would otherwise weigh as much as the decoder's.
	allocs := testing.AllocsPerRun(5, func() {
		n = 0
		d := NewDataURLWriter(&n)
		for p := text; len(p) > 0; {
			k := min(len(p), 256<<10)
			if _, err := d.Write(p[:k]); err != nil {
				t.Fatal(err)
			}
			p = p[k:]
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	})
	if int(n) != len(data) {
		t.Fatalf("decoded %d bytes, want %d", n, len(data))
	}
	if allocs > 4 {
		t.Errorf("%v allocations for 4 MiB, want a fixed few", allocs)
	}
}

type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }

func TestDataURLWriterPassesWriteErrors(t *testing.T) {
	errDisk := errors.New("disk full")
	d := NewDataURLWriter(writerFunc(func([]byte) (int, error) { return 0, errDisk }))
	if _, err := d.Write([]byte(DataURLPrefix + "QUJDQUJD")); err != errDisk {
		t.Fatalf("Write: %v, want the writer's error as is", err)
	}
	if err := d.Close(); err != errDisk {
		t.Fatalf("Close after the error: %v", err)
	}
}

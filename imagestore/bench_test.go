package imagestore

import (
	"bytes"
	"encoding/base64"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// benchSize is a typical drone photo.
const benchSize = 4 << 20

// benchData is incompressible, like real PNG payload.
func benchData(b *testing.B) []byte {
	b.Helper()
	data := make([]byte, benchSize)
	rand.NewChaCha8([32]byte{}).Read(data)
	return data
}

func BenchmarkWriteDataURL(b *testing.B) {
	data := benchData(b)
	// /dev/null costs one system call per Write, like an unbuffered socket.
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { devNull.Close() })
	sinks := []struct {
		name string
		w    io.Writer
	}{{"discard", io.Discard}, {"devnull", devNull}}

	for _, sink := range sinks {
		b.Run("bytes-to-"+sink.name, func(b *testing.B) {
			b.SetBytes(benchSize)
			b.ReportAllocs()
			for b.Loop() {
				if err := WriteDataURL(sink.w, bytes.NewReader(data)); err != nil {
					b.Fatal(err)
				}
			}
		})
		// The textbook version, for comparison: base64.NewEncoder under io.Copy,
		// which writes 1 KiB at a time.
		b.Run("baseline-NewEncoder-to-"+sink.name, func(b *testing.B) {
			b.SetBytes(benchSize)
			b.ReportAllocs()
			for b.Loop() {
				io.WriteString(sink.w, DataURLPrefix)
				enc := base64.NewEncoder(base64.StdEncoding, sink.w)
				io.CopyBuffer(enc, bytes.NewReader(data), make([]byte, 32<<10))
				enc.Close()
			}
		})
	}
	b.Run("file-to-discard", func(b *testing.B) {
		s, err := Open(filepath.Join(b.TempDir(), "images"))
		if err != nil {
			b.Fatal(err)
		}
		rel, err := s.Put(data)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(benchSize)
		b.ReportAllocs()
		for b.Loop() {
			r, _, err := s.Open(rel)
			if err != nil {
				b.Fatal(err)
			}
			err = WriteDataURL(io.Discard, r)
			r.Close()
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkDecodeDataURL(b *testing.B) {
	in := DataURLPrefix + base64.StdEncoding.EncodeToString(benchData(b))
	b.SetBytes(benchSize)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeDataURL(in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCheckPNG(b *testing.B) {
	data := readFixture(b, fixturePNG)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := CheckPNG(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPut is dominated by the two fsyncs; the number depends on the disk.
func BenchmarkPut(b *testing.B) {
	data := benchData(b)
	s, err := Open(filepath.Join(b.TempDir(), "images"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(benchSize)
	b.ReportAllocs()
	for b.Loop() {
		rel, err := s.Put(data)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		s.Remove(rel)
		b.StartTimer()
	}
}

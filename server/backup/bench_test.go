package backup_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gardend/gardend/server/backup"
)

// plyStandIn is a binary PLY of a plant as a field robot records it: x y z as
// float32 metres in a bed's frame (a noisy blob around the plant), and PCL's rgb
// packed into a float, greens varying. About 100 KiB at 6,400 points.
func plyStandIn(r *rand.Rand, points int) []byte {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "ply\nformat binary_little_endian 1.0\nelement vertex %d\n"+
		"property float x\nproperty float y\nproperty float z\nproperty float rgb\nend_header\n", points)
	cx, cy := r.Float64()*30, r.Float64()*2
	radius := 0.05 + r.Float64()*0.25
	rec := make([]byte, 16)
	for range points {
		// A point on the plant's surface, with sensor noise of a few millimetres.
		theta, phi := r.Float64()*2*math.Pi, math.Acos(2*r.Float64()-1)
		d := radius * (0.8 + 0.2*r.Float64())
		x := cx + d*math.Sin(phi)*math.Cos(theta) + r.NormFloat64()*0.003
		y := cy + d*math.Sin(phi)*math.Sin(theta) + r.NormFloat64()*0.003
		z := math.Abs(d*math.Cos(phi)) + r.NormFloat64()*0.003
		rgb := uint32(40+r.IntN(60))<<16 | uint32(110+r.IntN(120))<<8 | uint32(20+r.IntN(50))
		binary.LittleEndian.PutUint32(rec[0:], math.Float32bits(float32(x)))
		binary.LittleEndian.PutUint32(rec[4:], math.Float32bits(float32(y)))
		binary.LittleEndian.PutUint32(rec[8:], math.Float32bits(float32(z)))
		binary.LittleEndian.PutUint32(rec[12:], rgb)
		buf.Write(rec)
	}
	return buf.Bytes()
}

// pngStandIn is a drone-image stand-in: rows of plants on soil with texture, encoded
// by image/png, about 2 MiB.
func pngStandIn(r *rand.Rand) []byte {
	const w, h = 1500, 1100
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			row := math.Sin(float64(y)/25) > 0.2
			n := uint8(r.IntN(28))
			c := color.RGBA{110 + n, 80 + n, 50 + n/2, 255} // soil
			if row && math.Sin(float64(x)/9+float64(y)/40) > -0.3 {
				c = color.RGBA{40 + n, 120 + n*2, 30 + n, 255} // leaves
			}
			img.SetRGBA(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// benchDataDir lays out ~200 PLY files of ~100 KiB and one ~2 MiB PNG, and returns
// the directory and a 256 KiB database stand-in (mostly empty pages, as bbolt's are).
func benchDataDir(b *testing.B) (string, []byte) {
	b.Helper()
	dir := b.TempDir()
	r := rand.New(rand.NewPCG(1, 2))
	write := func(rel string, body []byte) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, body, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 200 {
		write(fmt.Sprintf("pointclouds/project-%d/geometry-%03d.ply", i/50, i), plyStandIn(r, 6400))
	}
	write("images/0123456789abcdef0123456789abcdef.png", pngStandIn(r))
	db := make([]byte, 256<<10)
	for off := 0; off < len(db); off += 4096 * 3 { // every third page holds records
		copy(db[off:], fmt.Sprintf(`{"id":%d,"username":"user%d","first_name":"F","last_name":"L"}`, off, off))
	}
	return dir, db
}

type countingDiscard struct{ n int64 }

func (c *countingDiscard) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// BenchmarkBackup measures a backup of the stand-in data directory as plain tar and
// through gzip, to decide whether compression pays. Metrics: archive-bytes and
// ratio (archive / input bytes).
func BenchmarkBackup(b *testing.B) {
	dir, db := benchDataDir(b)
	src := backup.Source{
		DataDir: dir, Database: "gardend.db",
		Snapshot:      func(w io.Writer) (int64, error) { n, err := w.Write(db); return int64(n), err },
		SchemaVersion: 1, GardendVersion: "bench", Created: time.Now(),
	}
	bw := backup.NewWriter()
	var input int64
	for _, level := range []int{0, gzip.BestSpeed, gzip.DefaultCompression} {
		name := "tar"
		if level != 0 {
			name = map[int]string{gzip.BestSpeed: "tar+gzip-fastest", gzip.DefaultCompression: "tar+gzip-default"}[level]
		}
		b.Run(name, func(b *testing.B) {
			var out countingDiscard
			cpu := cpuTime()
			for b.Loop() {
				out.n = 0
				var w io.Writer = &out
				var zw *gzip.Writer
				if level != 0 {
					zw, _ = gzip.NewWriterLevel(&out, level)
					w = zw
				}
				res, err := bw.Write(context.Background(), w, src)
				if err != nil {
					b.Fatal(err)
				}
				if zw != nil {
					zw.Close()
				}
				input = res.Manifest.TotalBytes()
			}
			b.ReportMetric(float64(cpuTime()-cpu)/1e6/float64(b.N), "cpu-ms/op")
			b.SetBytes(input)
			b.ReportMetric(float64(out.n), "archive-bytes")
			b.ReportMetric(float64(out.n)/float64(input), "ratio")
		})
	}
	b.Run("verify", func(b *testing.B) {
		var buf bytes.Buffer
		if _, err := bw.Write(context.Background(), &buf, src); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(buf.Len()))
		cpu := cpuTime()
		for b.Loop() {
			if _, err := backup.Verify(bytes.NewReader(buf.Bytes()), backup.ReadOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(cpuTime()-cpu)/1e6/float64(b.N), "cpu-ms/op")
	})
}

// BenchmarkCompressParts shows where gzip's gain comes from: each kind of file alone.
func BenchmarkCompressParts(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	_, db := benchDataDir(b)
	parts := map[string][]byte{"ply": plyStandIn(r, 6400), "png": pngStandIn(r), "db": db}
	for _, name := range []string{"ply", "png", "db"} {
		data := parts[name]
		b.Run(name, func(b *testing.B) {
			var out countingDiscard
			b.SetBytes(int64(len(data)))
			cpu := cpuTime()
			for b.Loop() {
				out.n = 0
				zw, _ := gzip.NewWriterLevel(&out, gzip.BestSpeed)
				zw.Write(data)
				zw.Close()
			}
			b.ReportMetric(float64(cpuTime()-cpu)/1e6/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(out.n)/float64(len(data)), "ratio")
		})
	}
}

package cloud

import (
	"bytes"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
)

// viewerPLY is what a viewer got before streaming: the whole file read, its
// non-finite points dropped, written again.
func viewerPLY(t testing.TB, file []byte) []byte {
	t.Helper()
	pc, err := ReadPLY(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if pc, err = FinitePoints(pc); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WritePLY(&b, pc); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// bigEndianPLY turns the little-endian PLY file WritePLY wrote into the same cloud
// as binary_big_endian.
func bigEndianPLY(t testing.TB, le []byte) []byte {
	t.Helper()
	head, data, ok := bytes.Cut(le, []byte("end_header\n"))
	if !ok {
		t.Fatal("no end_header")
	}
	var sizes []int
	for _, line := range strings.Split(string(head), "\n") {
		if w := strings.Fields(line); len(w) == 3 && w[0] == "property" {
			typ, _ := plyTypeOf(w[1])
			sizes = append(sizes, int(typ.Size()))
		}
	}
	out := bytes.Clone(data)
	for i := 0; i < len(out); {
		for _, size := range sizes {
			swapEach(out[i:i+size], size)
			i += size
		}
	}
	h := strings.Replace(string(head), "binary_little_endian", "binary_big_endian", 1)
	return append([]byte(h+"end_header\n"), out...)
}

// randomCloud is an organised cloud of w×h float32 points with colour, a share of
// them NaN (a pixel without depth) or with one infinite coordinate.
func randomCloud(seed uint64, w, h uint32, holes float64) PointCloud {
	r := rand.New(rand.NewPCG(seed, 1))
	fields := []Field{
		{Name: "x", Offset: 0, Datatype: Float32, Count: 1},
		{Name: "y", Offset: 4, Datatype: Float32, Count: 1},
		{Name: "z", Offset: 8, Datatype: Float32, Count: 1},
		{Name: "rgb", Offset: 16, Datatype: Uint8, Count: 3},
	}
	pts := make([][]float64, w*h)
	for i := range pts {
		p := []float64{500000 + r.Float64(), 5700000 + r.Float64(), r.Float64() * 2, float64(r.IntN(256)), float64(r.IntN(256)), float64(r.IntN(256))}
		if r.Float64() < holes {
			p[r.IntN(3)] = []float64{math.NaN(), math.Inf(1), math.Inf(-1)}[r.IntN(3)]
		}
		pts[i] = p
	}
	return build(fields, 20, w, h, w*20+4, false, pts)
}

func plyBytes(t testing.TB, pc PointCloud) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WritePLY(&b, pc); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestFinitePLYMatchesWholeCloud: streaming gives a viewer byte for byte what reading
// the whole cloud gave, from either byte order, and StatPLY the mean MeanXYZ gives.
func TestFinitePLYMatchesWholeCloud(t *testing.T) {
	for _, tc := range []struct {
		name string
		pc   PointCloud
	}{
		{"every type", everyTypeCloud(false)},
		{"every type, big-endian source", everyTypeCloud(true)},
		{"holes", randomCloud(1, 97, 31, 0.3)},
		{"no holes", randomCloud(2, 50, 20, 0)},
		{"all holes", randomCloud(3, 40, 3, 1.1)},
		{"empty", randomCloud(4, 0, 0, 0)},
		{"chunks and a rest", randomCloud(5, streamChunk/20*3+7, 1, 0.5)},
	} {
		for _, big := range []bool{false, true} {
			name := tc.name
			file := plyBytes(t, tc.pc)
			if big {
				name += ", big-endian file"
				file = bigEndianPLY(t, file)
			}
			t.Run(name, func(t *testing.T) {
				want := viewerPLY(t, file)
				whole, err := ReadPLY(bytes.NewReader(file))
				if err != nil {
					t.Fatal(err)
				}
				fin, _ := FinitePoints(whole)
				st, err := StatPLY(bytes.NewReader(file))
				if err != nil {
					t.Fatal(err)
				}
				if st.Vertices != int64(whole.Width) || st.Finite != int64(fin.Width) {
					t.Fatalf("StatPLY counts %d/%d, want %d/%d", st.Finite, st.Vertices, fin.Width, whole.Width)
				}
				mean, _, merr := MeanXYZ(whole)
				if st.MeanOK != (merr == nil) || st.Mean != mean {
					t.Fatalf("StatPLY mean %v (%v), MeanXYZ %v (%v)", st.Mean, st.MeanOK, mean, merr)
				}
				if wantPlain := !big && st.Finite == st.Vertices; st.Plain != wantPlain {
					t.Fatalf("Plain %v, want %v", st.Plain, wantPlain)
				}
				rd, size, err := FinitePLY(bytes.NewReader(file), st.Finite)
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(iotestOneByte{rd, len(file) % 3})
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) || size != int64(len(want)) {
					t.Fatalf("streamed %d bytes (size %d), whole cloud gives %d; equal %v", len(got), size, len(want), bytes.Equal(got, want))
				}
			})
		}
	}
}

// iotestOneByte reads with small buffers now and then, as a slow client's writes do.
type iotestOneByte struct {
	r    io.Reader
	seed int
}

func (o iotestOneByte) Read(p []byte) (int, error) {
	if o.seed == 1 && len(p) > 7 {
		p = p[:7]
	}
	return o.r.Read(p)
}

// TestFinitePLYFileChanged: a file with another number of finite points than was
// counted fails the stream instead of sending a header that lies.
func TestFinitePLYFileChanged(t *testing.T) {
	file := plyBytes(t, randomCloud(7, 300, 10, 0.2))
	st, err := StatPLY(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int64{st.Finite - 1, st.Finite + 1} {
		rd, _, err := FinitePLY(bytes.NewReader(file), n)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, rd); !errors.Is(err, ErrPLY) || !strings.Contains(err.Error(), "changed") {
			t.Errorf("finite %d of %d: %v", n, st.Finite, err)
		}
	}
	if _, _, err := FinitePLY(bytes.NewReader(file), st.Vertices+1); !errors.Is(err, ErrPLY) {
		t.Errorf("more finite points than vertices: %v", err)
	}
	// Cut short: an error, never a short cloud.
	rd, _, _ := FinitePLY(bytes.NewReader(file[:len(file)-5]), st.Finite)
	if _, err := io.Copy(io.Discard, rd); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated: %v", err)
	}
	if _, err := StatPLY(bytes.NewReader(file[:len(file)-5])); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("StatPLY truncated: %v", err)
	}
	if _, err := StatPLY(strings.NewReader("ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\nproperty float z\nend_header\n1 2 3\n")); !errors.Is(err, ErrPLY) {
		t.Errorf("ascii: %v", err)
	}
}

// TestFinitePLYMemory: streaming an 8 MiB cloud allocates a few chunks, not the cloud.
func TestFinitePLYMemory(t *testing.T) {
	file := plyBytes(t, randomCloud(9, 1024, 410, 0.25)) // 8.4 MB
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	st, err := StatPLY(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	rd, _, err := FinitePLY(bytes.NewReader(file), st.Finite)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, rd)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d bytes in, %d out, %d allocated", len(file), n, allocated)
	if allocated > 512<<10 {
		t.Fatalf("streaming a %d MiB cloud allocated %d KiB", len(file)>>20, allocated>>10)
	}
}

// FuzzFinitePLY: whatever binary file ReadPLY accepts with x, y and z, the stream is
// what the whole-cloud way gives.
func FuzzFinitePLY(f *testing.F) {
	for _, big := range []bool{false, true} {
		f.Add(plyBytes(f, everyTypeCloud(big)))
	}
	f.Add(bigEndianPLY(f, plyBytes(f, randomCloud(1, 5, 2, 0.5))))
	f.Add([]byte("ply\nformat binary_little_endian 1.0\nelement f 1\nproperty short a\nelement vertex 2\nproperty float x\nproperty float y\nproperty float z\nend_header\n\x00\x00" +
		"\x00\x00\x80\x3f\x00\x00\xc0\x7f\x00\x00\x00\x40\x00\x00\x80\x3f\x00\x00\x80\x3f\x00\x00\x80\x3f"))
	f.Fuzz(func(t *testing.T, in []byte) {
		st, err := StatPLY(bytes.NewReader(in))
		pc, rerr := ReadPLY(bytes.NewReader(in))
		if err != nil {
			if !errors.Is(err, ErrPLY) && !errors.Is(err, ErrInvalid) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if rerr != nil {
			t.Fatalf("StatPLY accepts what ReadPLY refuses: %v", rerr)
		}
		fin, err := FinitePoints(pc)
		if err != nil {
			t.Fatal(err)
		}
		if st.Finite != int64(fin.Width)*int64(fin.Height) {
			t.Fatalf("StatPLY finds %d finite points, FinitePoints %d", st.Finite, fin.Width*fin.Height)
		}
		var want bytes.Buffer
		if err := WritePLY(&want, fin); err != nil {
			t.Fatal(err)
		}
		rd, _, err := FinitePLY(bytes.NewReader(in), st.Finite)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rd)
		if err != nil || !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("stream differs (%v): %d bytes, want %d", err, len(got), want.Len())
		}
	})
}

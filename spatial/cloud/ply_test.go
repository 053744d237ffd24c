package cloud

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
)

// elemBits returns, point by point, every field element's bits as an unsigned integer
// (byte order resolved), plus a description of the fields: a layout-free view of a cloud.
func elemBits(pc PointCloud) (desc []string, vals []uint64) {
	for _, f := range pc.Fields {
		desc = append(desc, f.Name+":"+f.Datatype.String()+":"+string(rune('0'+f.elems())))
	}
	for r := 0; r < int(pc.Height); r++ {
		for i := 0; i < int(pc.Width); i++ {
			p := pc.Data[r*int(pc.RowStep)+i*int(pc.PointStep):]
			for _, f := range pc.Fields {
				size := f.Datatype.Size()
				for e := uint32(0); e < f.elems(); e++ {
					b := p[f.Offset+e*size:]
					switch size {
					case 1:
						vals = append(vals, uint64(b[0]))
					case 2:
						vals = append(vals, uint64(u16(b, pc.BigEndian)))
					case 4:
						vals = append(vals, uint64(u32(b, pc.BigEndian)))
					case 8:
						vals = append(vals, u64(b, pc.BigEndian))
					}
				}
			}
		}
	}
	return desc, vals
}

func sameValues(t *testing.T, got, want PointCloud) {
	t.Helper()
	gd, gv := elemBits(got)
	wd, wv := elemBits(want)
	if strings.Join(gd, ",") != strings.Join(wd, ",") {
		t.Fatalf("fields %v, want %v", gd, wd)
	}
	if len(gv) != len(wv) {
		t.Fatalf("%d values, want %d", len(gv), len(wv))
	}
	for i := range gv {
		if gv[i] != wv[i] {
			t.Fatalf("value %d = %#x, want %#x", i, gv[i], wv[i])
		}
	}
}

// everyTypeCloud has one field of each datatype, a count-3 field, point padding, row
// padding and two rows.
func everyTypeCloud(big bool) PointCloud {
	fields := []Field{
		{Name: "x", Offset: 0, Datatype: Float32, Count: 1},
		{Name: "y", Offset: 4, Datatype: Float32, Count: 1},
		{Name: "z", Offset: 8, Datatype: Float64, Count: 1},
		{Name: "i8", Offset: 16, Datatype: Int8, Count: 1},
		{Name: "u8", Offset: 17, Datatype: Uint8, Count: 1},
		{Name: "i16", Offset: 18, Datatype: Int16, Count: 1},
		{Name: "u16", Offset: 20, Datatype: Uint16, Count: 1},
		{Name: "i32", Offset: 24, Datatype: Int32, Count: 1},
		{Name: "u32", Offset: 28, Datatype: Uint32, Count: 1},
		{Name: "normal", Offset: 32, Datatype: Float32, Count: 3},
	}
	nan := math.NaN()
	pts := [][]float64{
		{1.5, -2.25, 3.125, -5, 250, -30000, 60000, -2000000000, 4000000000, 0.5, 0.25, -1},
		{nan, 1, math.Inf(-1), 127, 0, 32767, 0, math.MaxInt32, 0, 0, 0, 0},
		{0, 0, 1e300, -128, 255, -32768, 65535, math.MinInt32, math.MaxUint32, 1, 2, 3},
		{7, 8, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9},
	}
	return build(fields, 48, 2, 2, 100, big, pts)
}

func TestPLYRoundTrip(t *testing.T) {
	for _, big := range []bool{false, true} {
		pc := everyTypeCloud(big)
		var buf bytes.Buffer
		if err := WritePLY(&buf, pc); err != nil {
			t.Fatal(err)
		}
		got, err := ReadPLY(&buf)
		if err != nil {
			t.Fatalf("big=%v: ReadPLY: %v", big, err)
		}
		if got.BigEndian || got.Width != 4 || got.Height != 1 || got.PointStep != 42 || got.RowStep != 4*42 || len(got.Data) != 4*42 {
			t.Fatalf("big=%v: got layout %+v", big, PointCloud{Width: got.Width, Height: got.Height,
				PointStep: got.PointStep, RowStep: got.RowStep, BigEndian: got.BigEndian})
		}
		sameValues(t, got, pc)
		if err := got.Validate(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestWritePLYHeaderAndBody(t *testing.T) {
	pc := build([]Field{
		{Name: "x", Offset: 4, Datatype: Float32, Count: 1},
		{Name: "y", Offset: 8, Datatype: Float32, Count: 1},
		{Name: "rgb", Offset: 12, Datatype: Uint8, Count: 2},
	}, 16, 1, 1, 16, true, [][]float64{{1, 2, 3, 4}})
	var buf bytes.Buffer
	if err := WritePLY(&buf, pc); err != nil {
		t.Fatal(err)
	}
	wantHeader := "ply\nformat binary_little_endian 1.0\ncomment PointCloud2 width 1 height 1\n" +
		"element vertex 1\nproperty float x\nproperty float y\nproperty uchar rgb_0\nproperty uchar rgb_1\nend_header\n"
	body := binary.LittleEndian.AppendUint32(nil, math.Float32bits(1))
	body = binary.LittleEndian.AppendUint32(body, math.Float32bits(2))
	body = append(body, 3, 4)
	if got := buf.String(); got != wantHeader+string(body) {
		t.Fatalf("got\n%q\nwant\n%q", got, wantHeader+string(body))
	}
}

func TestWritePLYErrors(t *testing.T) {
	ok := packed([]string{"x", "y"}, Float32, false, [][]float64{{1, 2}})
	bad := []PointCloud{ok, ok, ok, ok}
	bad[0].Fields = []Field{{Name: "x y", Datatype: Float32, Count: 1}}
	bad[1].Fields = []Field{{Name: "", Datatype: Float32, Count: 1}}
	bad[2].Data = nil
	bad[3].Fields = []Field{{Name: "x", Datatype: 0, Count: 1}}
	for i, pc := range bad {
		var buf bytes.Buffer
		if err := WritePLY(&buf, pc); !errors.Is(err, ErrInvalid) || buf.Len() != 0 {
			t.Errorf("case %d: err %v, wrote %d bytes", i, err, buf.Len())
		}
	}
	// A cloud without x and y is still a cloud: it can be exported.
	var buf bytes.Buffer
	if err := WritePLY(&buf, packed([]string{"intensity"}, Uint16, false, [][]float64{{9}})); err != nil {
		t.Fatal(err)
	}
}

func TestReadPLYBigEndianAndAliases(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("ply\r\nformat binary_big_endian 1.0\r\ncomment made by hand\r\nobj_info none\r\n" +
		"element vertex 2\r\nproperty float64 x\r\nproperty int16 y\r\nelement face 7\r\n" +
		"property list uchar int vertex_indices\r\nend_header\r\n")
	for _, v := range [][2]float64{{1.5, -3}, {2.5, 300}} {
		b.Write(binary.BigEndian.AppendUint64(nil, math.Float64bits(v[0])))
		b.Write(binary.BigEndian.AppendUint16(nil, uint16(int16(v[1]))))
	}
	b.WriteString("faces are not read")
	pc, err := ReadPLY(&b)
	if err != nil {
		t.Fatal(err)
	}
	if !pc.BigEndian || pc.Width != 2 || pc.PointStep != 10 {
		t.Fatalf("got %+v", pc)
	}
	x, y, n, err := Centroid(pc)
	if err != nil || x != 2 || y != 148.5 || n != 2 {
		t.Fatalf("Centroid = %v, %v, %d, %v", x, y, n, err)
	}
}

func TestReadPLYASCII(t *testing.T) {
	in := "ply\nformat ascii 1.0\nelement camera 2\nproperty float view\nproperty list uchar int ids\n" +
		"element vertex 3\nproperty float x\nproperty double y\nproperty uchar c_0\nproperty uchar c_1\n" +
		"property char s\nproperty uint u\nend_header\n" +
		"1.5 3 7 8 9\n2 0\n" +
		"1 2 255 0 -128 4294967295\n3 nan 1 2 127 0\n" +
		"5 4 0 0 0 0\n"
	pc, err := ReadPLY(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := build([]Field{
		{Name: "x", Offset: 0, Datatype: Float32, Count: 1},
		{Name: "y", Offset: 4, Datatype: Float64, Count: 1},
		{Name: "c", Offset: 12, Datatype: Uint8, Count: 2},
		{Name: "s", Offset: 14, Datatype: Int8, Count: 1},
		{Name: "u", Offset: 15, Datatype: Uint32, Count: 1},
	}, 19, 3, 1, 57, false, [][]float64{
		{1, 2, 255, 0, -128, 4294967295}, {3, math.NaN(), 1, 2, 127, 0}, {5, 4, 0, 0, 0, 0},
	})
	sameValues(t, pc, want)
	x, y, n, err := Centroid(pc)
	if err != nil || x != 3 || y != 3 || n != 2 {
		t.Fatalf("Centroid = %v, %v, %d, %v", x, y, n, err)
	}
}

func TestReadPLYErrors(t *testing.T) {
	hdr := func(body string) string { return "ply\nformat binary_little_endian 1.0\n" + body }
	cases := map[string]string{
		"empty":                    "",
		"not ply":                  "plx\n",
		"no format":                "ply\nelement vertex 0\nproperty float x\nend_header\n",
		"two formats":              hdr("format ascii 1.0\nend_header\n"),
		"version 2":                "ply\nformat ascii 2.0\nend_header\n",
		"unknown format":           "ply\nformat binary_middle_endian 1.0\nend_header\n",
		"unknown keyword":          hdr("elephant vertex 1\nend_header\n"),
		"property first":           hdr("property float x\nend_header\n"),
		"unknown type":             hdr("element vertex 1\nproperty float16 x\nend_header\n"),
		"bad property line":        hdr("element vertex 1\nproperty float\nend_header\n"),
		"bad count":                hdr("element vertex -1\nproperty float x\nend_header\n"),
		"no vertex":                hdr("element face 0\nproperty float x\nend_header\n"),
		"vertex without props":     hdr("element vertex 0\nend_header\n"),
		"vertex list":              hdr("element vertex 1\nproperty list uchar int x\nend_header\n\x00"),
		"list before vertex":       hdr("element face 1\nproperty list uchar int i\nelement vertex 0\nproperty float x\nend_header\n"),
		"unterminated header":      hdr("element vertex 1\nproperty float x\n"),
		"truncated data":           hdr("element vertex 2\nproperty float x\nend_header\n12345"),
		"truncated skipped":        hdr("element face 9\nproperty int a\nelement vertex 0\nproperty float x\nend_header\n12"),
		"huge skipped element":     hdr("element face 18446744073709551615\nproperty double a\nelement vertex 0\nproperty float x\nend_header\n"),
		"absurd vertex count":      hdr("element vertex 18446744073709551615\nproperty float x\nend_header\n"),
		"over the limit":           hdr("element vertex 300000000\nproperty float x\nend_header\n"),
		"long line":                "ply\ncomment " + strings.Repeat("a", 5000) + "\n",
		"ascii bad number":         "ply\nformat ascii 1.0\nelement vertex 1\nproperty uchar x\nend_header\n256\n",
		"ascii truncated":          "ply\nformat ascii 1.0\nelement vertex 2\nproperty float x\nend_header\n1\n",
		"ascii bad list length":    "ply\nformat ascii 1.0\nelement f 1\nproperty list uchar int i\nelement vertex 0\nproperty float x\nend_header\nx\n",
		"ascii truncated list":     "ply\nformat ascii 1.0\nelement f 1\nproperty list uchar int i\nelement vertex 0\nproperty float x\nend_header\n3 1 2",
		"ascii token too long":     "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nend_header\n" + strings.Repeat("1", 5000),
		"list with bad count type": hdr("element vertex 1\nproperty list float int x\nend_header\n"),
	}
	for name, in := range cases {
		if _, err := ReadPLY(strings.NewReader(in)); !errors.Is(err, ErrPLY) {
			t.Errorf("%s: err = %v, want ErrPLY", name, err)
		}
	}
}

// TestReadPLYClaimsCostNothing checks that memory follows the data, not the header.
func TestReadPLYClaimsCostNothing(t *testing.T) {
	in := "ply\nformat binary_little_endian 1.0\nelement vertex 250000000\nproperty float x\nend_header\n" +
		strings.Repeat("\x00", 1000)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := ReadPLY(strings.NewReader(in)); !errors.Is(err, ErrPLY) {
		t.Fatalf("err = %v", err)
	}
	runtime.ReadMemStats(&after)
	if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
		t.Fatalf("allocated %d bytes for 1000 bytes of data", d)
	}
}

func TestMergeCounted(t *testing.T) {
	f := func(name string, dt Datatype) Field { return Field{Name: name, Datatype: dt, Count: 1} }
	got := mergeCounted([]Field{
		f("a_0", Float32), f("a_1", Float32), f("a_2", Float32), // merged
		f("b_0", Float32),               // alone: kept
		f("c_0", Uint8), f("c_1", Int8), // types differ: kept
		f("d_1", Uint8), f("d_0", Uint8), // out of order: kept
		f("_0", Uint8), f("_1", Uint8), // no base: kept
	})
	var names []string
	for _, g := range got {
		names = append(names, g.Name+"/"+string(rune('0'+g.Count)))
	}
	want := "a/3 b_0/1 c_0/1 c_1/1 d_1/1 d_0/1 _0/1 _1/1"
	if strings.Join(names, " ") != want {
		t.Fatalf("got %v, want %v", names, want)
	}
}

func BenchmarkWritePLY(b *testing.B) {
	pc := benchCloud(Float32, false, 16)
	b.SetBytes(int64(len(pc.Data)))
	for b.Loop() {
		if err := WritePLY(discard{}, pc); err != nil {
			b.Fatal(err)
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

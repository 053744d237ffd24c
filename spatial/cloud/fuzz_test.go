package cloud

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

// fuzzCloud makes a cloud with fields x and y from fuzz parameters; rowPad and the
// types come in as small numbers so most inputs are near-valid.
func fuzzCloud(data []byte, w, h, ps uint32, rowPad uint32, ox, oy uint32, tx, ty uint8, cx uint32, big bool) PointCloud {
	return PointCloud{
		Width: w, Height: h, PointStep: ps, RowStep: w*ps + rowPad,
		Fields: []Field{
			{Name: "x", Offset: ox, Datatype: Datatype(tx), Count: cx},
			{Name: "y", Offset: oy, Datatype: Datatype(ty), Count: 1},
		},
		BigEndian: big, Data: data,
	}
}

func FuzzCentroid(f *testing.F) {
	f.Add(make([]byte, 32), uint32(2), uint32(2), uint32(8), uint32(0), uint32(0), uint32(4), uint8(7), uint8(7), uint32(1), false)
	f.Add(bytes.Repeat([]byte{0x3f, 0x80, 0, 0, 0x7f, 0xc0, 0, 0}, 8), uint32(4), uint32(2), uint32(8), uint32(0), uint32(0), uint32(4), uint8(7), uint8(7), uint32(1), true)
	f.Add(bytes.Repeat([]byte{1, 2, 3}, 40), uint32(5), uint32(3), uint32(7), uint32(3), uint32(6), uint32(0), uint8(2), uint8(3), uint32(0), false)
	f.Add([]byte{}, uint32(1<<31), uint32(1<<31), uint32(16), uint32(0), uint32(0), uint32(8), uint8(8), uint8(8), uint32(1), false)
	f.Fuzz(func(t *testing.T, data []byte, w, h, ps, rowPad, ox, oy uint32, tx, ty uint8, cx uint32, big bool) {
		pc := fuzzCloud(data, w, h, ps, rowPad, ox, oy, tx, ty, cx, big)
		x, y, n, err := Centroid(pc)
		if err != nil {
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrNoPoints) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			if n != 0 {
				t.Fatalf("n = %d with error %v", n, err)
			}
			return
		}
		if pc.Validate() != nil {
			t.Fatalf("Centroid accepted a cloud Validate rejects: %v", pc.Validate())
		}
		if n < 1 || uint64(n) > uint64(w)*uint64(h) || math.IsNaN(x+y) || math.IsInf(x+y, 0) {
			t.Fatalf("Centroid = %v, %v, %d", x, y, n)
		}
		gx, gy, gn, gerr := genericCentroid(pc)
		if gx != x || gy != y || gn != n || gerr != nil {
			t.Fatalf("fast (%v,%v,%d) != generic (%v,%v,%d,%v)", x, y, n, gx, gy, gn, gerr)
		}
	})
}

func FuzzReadPLY(f *testing.F) {
	for _, big := range []bool{false, true} {
		var b bytes.Buffer
		if err := WritePLY(&b, everyTypeCloud(big)); err != nil {
			f.Fatal(err)
		}
		f.Add(b.Bytes())
	}
	f.Add([]byte("ply\nformat ascii 1.0\nelement f 1\nproperty list uchar int i\nelement vertex 2\n" +
		"property float x\nproperty float y\nend_header\n2 1 2\n1 2\n3 nan\n"))
	f.Add([]byte("ply\nformat binary_big_endian 1.0\nelement vertex 1\nproperty double x\nproperty short y\nend_header\n0123456789"))
	f.Fuzz(func(t *testing.T, in []byte) {
		pc, err := ReadPLY(bytes.NewReader(in))
		if err != nil {
			if !errors.Is(err, ErrPLY) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if err := pc.checkLayout(); err != nil {
			t.Fatalf("ReadPLY returned a malformed cloud: %v", err)
		}
		_, _, _, _ = Centroid(pc) // must not panic
		var out bytes.Buffer
		if err := WritePLY(&out, pc); err != nil {
			t.Fatalf("WritePLY of a read cloud: %v", err)
		}
		again, err := ReadPLY(&out)
		if err != nil {
			t.Fatalf("ReadPLY of WritePLY output: %v", err)
		}
		sameValues(t, again, pc)
	})
}

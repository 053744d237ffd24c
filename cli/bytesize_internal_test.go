package cli

import "testing"

func TestByteSizeFlag(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "1048576": 1 << 20, "500MB": 500e6, "2GiB": 2 << 30, "1.5G": 3 << 29, "64 KiB": 64 << 10, "10kB": 10e3, "7B": 7,
	} {
		var b byteSize
		if err := b.Set(in); err != nil || int64(b) != want {
			t.Errorf("%q: %d, %v; want %d", in, b, err, want)
		}
	}
	for _, in := range []string{"", "-1", "lots", "2XB", "1e30GiB", "NaN"} {
		var b byteSize
		if err := b.Set(in); err == nil {
			t.Errorf("%q accepted as %d", in, b)
		}
	}
}

package cli

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// byteSize is a flag of a number of bytes, with an optional unit: 500MB, 2GiB, 1.5G.
// kB, MB, GB, TB are powers of 1000, KiB, MiB, GiB, TiB (and K, M, G, T) of 1024.
type byteSize int64

var byteUnits = []struct {
	suffix string
	factor float64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40},
	{"B", 1},
}

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }
func (b *byteSize) Type() string   { return "bytes" }

func (b *byteSize) Set(s string) error {
	num, factor := strings.TrimSpace(s), 1.0
	for _, u := range byteUnits {
		if n, ok := strings.CutSuffix(num, u.suffix); ok {
			num, factor = strings.TrimSpace(n), u.factor
			break
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) || v*factor > math.MaxInt64 {
		return fmt.Errorf("%q is not a size: use bytes, or a number with a unit like 500MB or 2GiB", s)
	}
	*b = byteSize(v * factor)
	return nil
}

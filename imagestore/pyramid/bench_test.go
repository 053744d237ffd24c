package pyramid_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/gardend/gardend/imagestore/pngtest"
	"github.com/gardend/gardend/imagestore/pyramid"
)

// BenchmarkBuild builds the pyramid of a 2536 × 1731 picture (the PlantMap sample's
// size) with one and two encoding workers. The 12,000 × 9,000 figures are the
// server's (BenchmarkTilesLargePicture in ./server).
//
//	go test ./imagestore/pyramid -run '^$' -bench Build -benchtime 3x
func BenchmarkBuild(b *testing.B) {
	src := pngtest.Photo(2536, 1731, 1)
	for _, k := range []pngtest.Kind{{ColorType: pngtest.True, Depth: 8}, {ColorType: pngtest.TrueAlpha, Depth: 8}} {
		data := pngtest.Encode(src, k, pngtest.Options{})
		for _, workers := range []int{1, 2} {
			b.Run(k.String()+"-workers-"+string(rune('0'+workers)), func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				var size int64
				for b.Loop() {
					var out memFile
					_, n, err := pyramid.Build(context.Background(), bytes.NewReader(data), int64(len(data)), &out, pyramid.Options{Workers: workers})
					if err != nil {
						b.Fatal(err)
					}
					size = n
				}
				b.ReportMetric(float64(size), "pack-bytes")
			})
		}
	}
}

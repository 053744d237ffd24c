package pngstream_test

import (
	"bytes"
	"image/png"
	"testing"

	"github.com/gardend/gardend/imagestore/pngtest"
)

// FuzzDecoder holds the stream decoder to image/png: for any bytes, both refuse them
// or both decode the same pixels.
func FuzzDecoder(f *testing.F) {
	src := pngtest.Photo(11, 7, 1)
	for _, k := range pngtest.Kinds() {
		f.Add(pngtest.Encode(src, k, pngtest.Options{IDATSize: 40}))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// image/png holds the whole picture: keep its allocations small.
		if cfg, err := png.DecodeConfig(bytes.NewReader(b)); err == nil && cfg.Width*cfg.Height > 1<<16 {
			t.Skip()
		}
		same(t, b)
	})
}

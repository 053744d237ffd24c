package photo_test

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/jpeg"
	"math/rand/v2"
	"testing"

	"github.com/gardend/gardend/server/photo"
)

// BenchmarkProcess12MP measures storing a 12-megapixel phone photo (4032×3024,
// 4:2:0), upright already and turned by its EXIF orientation (the common portrait
// shot), with its thumbnail.
func BenchmarkProcess12MP(b *testing.B) {
	img := image.NewYCbCr(image.Rect(0, 0, 4032, 3024), image.YCbCrSubsampleRatio420)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range img.Y {
		img.Y[i] = uint8(128 + r.IntN(32))
	}
	for _, o := range []uint16{1, 6} {
		var buf bytes.Buffer
		if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
			b.Fatal(err)
		}
		file := jpegWithMetadata(b, img, exif(binary.LittleEndian, o))
		b.Run(map[uint16]string{1: "upright", 6: "turned"}[o], func(b *testing.B) {
			h, err := photo.ReadHeader(bytes.NewReader(file))
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(file)))
			for b.Loop() {
				if _, err := photo.Process(bytes.NewReader(file), h, 320, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReadHeader measures reading the header of a 12-megapixel photo of noise
// (a large file), which walks every marker to the end to count the scans.
func BenchmarkReadHeader(b *testing.B) {
	img := image.NewYCbCr(image.Rect(0, 0, 4032, 3024), image.YCbCrSubsampleRatio420)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range img.Y {
		img.Y[i] = uint8(r.IntN(256))
	}
	file := jpegWithMetadata(b, img, exif(binary.LittleEndian, 6))
	b.SetBytes(int64(len(file)))
	for b.Loop() {
		if _, err := photo.ReadHeader(bytes.NewReader(file)); err != nil {
			b.Fatal(err)
		}
	}
}

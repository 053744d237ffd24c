package plantmap

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/draw"
	_ "image/gif" // decoders the old server's uploads may need
	_ "image/jpeg"
	"image/png"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gardend/gardend/imagestore"
)

// Limits on a garden image from the old server: its file, and its pixels (decoding
// holds them all in memory, a few bytes each).
const (
	MaxImageFileBytes = 256 << 20
	MaxImagePixels    = 100_000_000
)

// Image is a garden image ready for gardend, which keeps PNG only.
type Image struct {
	PNG           []byte
	Width, Height int
	// Format is what the file really was ("png", "jpeg", "gif"), whatever its name
	// said; Converted is true when it was not PNG and was re-encoded, pixel for pixel.
	Format    string
	Converted bool
}

// LoadImage reads name from the media directory and returns it as PNG: a PNG as it
// is, a JPEG or GIF (PlantMap's sample "PNG" is really a JPEG) decoded and encoded as
// PNG at the same size.
func LoadImage(mediaDir, name string) (Image, error) {
	if mediaDir == "" {
		return Image{}, errors.New("pass --media DIR with the old server's image directory (the files its image_path names), or set image_path to \"\" in the dump to import the garden without its image")
	}
	path := filepath.Join(mediaDir, name)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Image{}, fmt.Errorf("its image file %s is not in %s", name, mediaDir)
	}
	if err != nil {
		return Image{}, fmt.Errorf("its image file: %w", err)
	}
	defer func() { _ = f.Close() }() // read only
	data, err := io.ReadAll(io.LimitReader(f, MaxImageFileBytes+1))
	if err != nil {
		return Image{}, fmt.Errorf("read its image file %s: %w", name, err)
	}
	if len(data) > MaxImageFileBytes {
		return Image{}, fmt.Errorf("its image file %s is larger than %d MiB", name, MaxImageFileBytes>>20)
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return Image{}, fmt.Errorf("its image file %s is not a PNG, JPEG or GIF image gardend can read (%v)", name, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > MaxImagePixels {
		return Image{}, fmt.Errorf("its image %s is %d×%d pixels; gardend takes up to %d million", name, cfg.Width, cfg.Height, MaxImagePixels/1_000_000)
	}
	img := Image{Width: cfg.Width, Height: cfg.Height, Format: format}
	if format == "png" {
		if _, _, err := imagestore.CheckPNG(data); err != nil {
			return Image{}, fmt.Errorf("its image file %s: %w", name, err)
		}
	}
	// Every image is decoded whole, so a damaged one is found now, not by a viewer.
	decoded, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return Image{}, fmt.Errorf("its image file %s is damaged: %v", name, err)
	}
	if format == "png" {
		img.PNG = data
		return img, nil
	}
	// JPEG's colour models have no fast path in the PNG encoder, which then writes 16
	// bits per channel: as 8-bit RGBA the file is half the size and twice as quick.
	switch decoded.(type) {
	case *image.YCbCr, *image.CMYK:
		rgba := image.NewRGBA(decoded.Bounds())
		draw.Draw(rgba, rgba.Bounds(), decoded, decoded.Bounds().Min, draw.Src)
		decoded = rgba
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, decoded); err != nil {
		return Image{}, fmt.Errorf("convert its image %s to PNG: %w", name, err)
	}
	img.PNG, img.Converted = buf.Bytes(), true
	return img, nil
}

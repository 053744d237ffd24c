package photo

import (
	"bufio"
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"math"
)

// Limits bound what a photo may cost.
type Limits struct {
	// MaxPixels is the most pixels of a phone's JPEG (4:2:0 or 4:4:4); kinds that cost
	// more memory per pixel (PNG with alpha, 16-bit PNG, progressive JPEG) get
	// proportionally fewer, so that decoding never takes more than 3 bytes × MaxPixels.
	MaxPixels int64
}

// DefaultMaxPixels admits 48-megapixel phone photos (4:2:0) and 24-megapixel ones of
// any common kind, for at most 72 MiB of decoded picture.
const DefaultMaxPixels = 24_000_000

// Budget is the memory a decode may take.
func (l Limits) Budget() int64 { return 3 * l.MaxPixels }

// Check refuses a header whose decode would take more than the budget, naming the
// photo's size and what its kind may have.
func (l Limits) Check(h Header) error {
	if h.DecodeBytes <= l.Budget() {
		return nil
	}
	px := int64(h.Width) * int64(h.Height)
	perPixel := float64(h.DecodeBytes) / float64(px)
	allowed := float64(l.Budget()) / perPixel / 1e6
	return fmt.Errorf("%w: it is %d×%d pixels (%.1f megapixels); %s may have at most %.1f megapixels here: send it smaller",
		ErrTooLarge, h.Width, h.Height, float64(px)/1e6, h.Kind, math.Floor(allowed*10)/10)
}

// Qualities of the encodings.
const (
	photoQuality = 90
	thumbQuality = 82
)

// Result is what Process wrote.
type Result struct {
	// Width and Height of the stored (upright) picture; the thumbnail's.
	Width, Height           int
	ThumbWidth, ThumbHeight int
}

// MakeThumb decodes the photo in r (whose header is h) and writes only its
// thumbnail, as Process does.
func MakeThumb(r io.Reader, h Header, thumbMax int, thumb io.Writer) error {
	img, err := decode(r, h)
	if err != nil {
		return err
	}
	if err := jpeg.Encode(thumb, Thumbnail(Orient(img, h.Orientation), thumbMax), &jpeg.Options{Quality: thumbQuality}); err != nil {
		return fmt.Errorf("encode thumbnail: %w", err)
	}
	return nil
}

// maxConfigScan bounds what the decoder may read of a file to report its size.
const maxConfigScan = maxHeaderScan + 1<<20

func decode(r io.Reader, h Header) (image.Image, error) {
	decodeConfig, decodeImage := jpeg.DecodeConfig, jpeg.Decode
	switch h.ContentType {
	case JPEG:
	case PNG:
		decodeConfig, decodeImage = png.DecodeConfig, png.Decode
	default:
		return nil, ErrNotPhoto
	}
	// The limits were checked against h: before the decoder allocates, its own
	// reading of the header must report the same size, whatever trick a file plays
	// on a reader of headers. What it reads is kept and read again.
	br := bufio.NewReaderSize(r, 64<<10)
	var head bytes.Buffer
	cfg, err := decodeConfig(io.TeeReader(io.LimitReader(br, maxConfigScan), &head))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadPhoto, err)
	}
	if cfg.Width != h.Width || cfg.Height != h.Height {
		return nil, fmt.Errorf("%w: its headers disagree on its size (%d×%d or %d×%d)", ErrBadPhoto, h.Width, h.Height, cfg.Width, cfg.Height)
	}
	img, err := decodeImage(io.MultiReader(&head, br))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadPhoto, err)
	}
	if b := img.Bounds(); b.Dx() != h.Width || b.Dy() != h.Height {
		return nil, fmt.Errorf("%w: it decodes to %d×%d, its header says %d×%d", ErrBadPhoto, b.Dx(), b.Dy(), h.Width, h.Height)
	}
	return img, nil
}

// Process decodes the photo in r (whose header is h, checked against the limits by
// the caller), and writes it upright, in its own format and without any metadata,
// to full, and a JPEG of at most thumbMax pixels on its long side to thumb.
func Process(r io.Reader, h Header, thumbMax int, full, thumb io.Writer) (Result, error) {
	img, err := decode(r, h)
	if err != nil {
		return Result{}, err
	}
	up := Orient(img, h.Orientation)
	b := up.Bounds()
	res := Result{Width: b.Dx(), Height: b.Dy()}
	switch h.ContentType {
	case JPEG:
		err = jpeg.Encode(full, up, &jpeg.Options{Quality: photoQuality})
	case PNG:
		err = (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(full, up)
	}
	if err != nil {
		return Result{}, fmt.Errorf("encode photo: %w", err)
	}
	small := Thumbnail(up, thumbMax)
	tb := small.Bounds()
	res.ThumbWidth, res.ThumbHeight = tb.Dx(), tb.Dy()
	if err := jpeg.Encode(thumb, small, &jpeg.Options{Quality: thumbQuality}); err != nil {
		return Result{}, fmt.Errorf("encode thumbnail: %w", err)
	}
	return res, nil
}

// Orient returns img turned upright by an EXIF orientation (1–8), without copying
// pixels: a view that maps each position to the source's.
func Orient(img image.Image, orientation int) image.Image {
	if orientation <= 1 || orientation > 8 {
		return img
	}
	return oriented{src: img, o: orientation}
}

type oriented struct {
	src image.Image
	o   int
}

func (v oriented) ColorModel() color.Model { return v.src.ColorModel() }

func (v oriented) Bounds() image.Rectangle {
	b := v.src.Bounds()
	if v.o >= 5 {
		return image.Rect(0, 0, b.Dy(), b.Dx())
	}
	return image.Rect(0, 0, b.Dx(), b.Dy())
}

// At maps (x, y) of the upright picture to the stored one (EXIF 2.3, tag 0x0112:
// where the stored rows and columns appear).
func (v oriented) At(x, y int) color.Color {
	b := v.src.Bounds()
	w, h := b.Dx(), b.Dy()
	var sx, sy int
	switch v.o {
	case 2: // mirrored
		sx, sy = w-1-x, y
	case 3: // turned 180°
		sx, sy = w-1-x, h-1-y
	case 4: // flipped
		sx, sy = x, h-1-y
	case 5: // transposed
		sx, sy = y, x
	case 6: // stored turned 90° anticlockwise: turn clockwise
		sx, sy = y, h-1-x
	case 7: // transversed
		sx, sy = w-1-y, h-1-x
	case 8: // stored turned 90° clockwise
		sx, sy = w-1-y, x
	}
	return v.src.At(b.Min.X+sx, b.Min.Y+sy)
}

// Thumbnail scales img down to at most maxSide pixels on its long side (a smaller
// picture keeps its size), averaging a grid of samples per pixel, on white where it
// is transparent.
func Thumbnail(img image.Image, maxSide int) *image.RGBA {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	scale := min(1, float64(maxSide)/float64(max(w, h)))
	tw, th := max(1, int(math.Round(float64(w)*scale))), max(1, int(math.Round(float64(h)*scale)))
	out := image.NewRGBA(image.Rect(0, 0, tw, th))
	// Samples per output pixel and axis: enough to see every row of a 4:1
	// reduction, at most 4 (16 samples).
	k := min(4, max(1, int(math.Ceil(1/scale))))
	for ty := range th {
		for tx := range tw {
			var r, g, bl, n uint64
			for j := range k {
				sy := b.Min.Y + min(h-1, int((float64(ty)+(float64(j)+0.5)/float64(k))/scale))
				for i := range k {
					sx := b.Min.X + min(w-1, int((float64(tx)+(float64(i)+0.5)/float64(k))/scale))
					cr, cg, cb, ca := img.At(sx, sy).RGBA()
					// Premultiplied: over white adds what alpha leaves.
					r += uint64(cr + 0xffff - ca)
					g += uint64(cg + 0xffff - ca)
					bl += uint64(cb + 0xffff - ca)
					n++
				}
			}
			out.SetRGBA(tx, ty, color.RGBA{uint8(r / n >> 8), uint8(g / n >> 8), uint8(bl / n >> 8), 0xff})
		}
	}
	return out
}

package pyramid

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"sync"

	"github.com/gardend/gardend/imagestore/pngstream"
)

// ErrPicture: the picture cannot be tiled however often it is tried: its data is
// damaged, or it is larger than the limits. The message says which.
var ErrPicture = errors.New("the picture cannot be tiled")

// Defaults of Options.
const (
	DefaultThumbSize   = 320
	DefaultPreviewSize = 1600
	DefaultQuality     = 80
	// DefaultMaxSide bounds each side: a row of the widest costs a few megabytes.
	DefaultMaxSide = 65535
)

// Options tune Build.
type Options struct {
	TileSize    int // default DefaultTileSize
	ThumbSize   int // longer side of the thumbnail; default DefaultThumbSize
	PreviewSize int // most the preview's longer side may be; default DefaultPreviewSize
	Quality     int // JPEG quality; default DefaultQuality
	// PNGOnly encodes everything as PNG (tests compare tiles pixel by pixel).
	PNGOnly bool
	// Workers encode tiles at once; default 1.
	Workers int
	// MaxPixels refuses larger pictures (0: no limit); MaxSide longer sides (default
	// DefaultMaxSide).
	MaxPixels int64
	MaxSide   int
	// ScratchDir and MaxBandBytes: see TilerOptions.
	ScratchDir   string
	MaxBandBytes int64
	// Progress, when set, is called with the rows decoded so far, every band.
	Progress func(rows, total int)
}

func (o *Options) setDefaults() {
	if o.TileSize <= 0 {
		o.TileSize = DefaultTileSize
	}
	if o.ThumbSize <= 0 {
		o.ThumbSize = DefaultThumbSize
	}
	if o.PreviewSize <= 0 {
		o.PreviewSize = DefaultPreviewSize
	}
	if o.Quality <= 0 {
		o.Quality = DefaultQuality
	}
	if o.Workers <= 0 {
		o.Workers = 1
	}
	if o.MaxSide <= 0 {
		o.MaxSide = DefaultMaxSide
	}
}

// CheckSize refuses a picture of w × h pixels that o's limits do not allow, with an
// error wrapping ErrPicture that names the limit.
func (o Options) CheckSize(w, h int) error {
	o.setDefaults()
	if o.MaxPixels > 0 && int64(w)*int64(h) > o.MaxPixels {
		return fmt.Errorf("%w: it has %d × %d = %s, more than the %s allowed", ErrPicture, w, h, Pixels(int64(w)*int64(h)), Pixels(o.MaxPixels))
	}
	if max(w, h) > o.MaxSide {
		return fmt.Errorf("%w: it is %d × %d pixels; a side may be at most %d", ErrPicture, w, h, o.MaxSide)
	}
	return nil
}

// Pixels says n pixels in words: "1200 pixels", "108 megapixels", "2.5 megapixels".
func Pixels(n int64) string {
	switch {
	case n < 1_000_000:
		return fmt.Sprintf("%d pixels", n)
	case n%1_000_000 == 0:
		return fmt.Sprintf("%d megapixels", n/1_000_000)
	}
	return fmt.Sprintf("%.1f megapixels", float64(n)/1e6)
}

// Build makes the pack of the PNG in src[0:size] into dst (written at offsets, from
// 0) and returns its description and size. Errors that the picture causes wrap
// ErrPicture; others (reading, writing, ctx) are returned as they are.
func Build(ctx context.Context, src io.ReaderAt, size int64, dst io.WriterAt, o Options) (Info, int64, error) {
	o.setDefaults()
	dec, err := pngstream.NewDecoder(src, size)
	if err != nil {
		return Info{}, 0, pictureError(err)
	}
	hdr := dec.Header()
	if err := o.CheckSize(hdr.Width, hdr.Height); err != nil {
		return Info{}, 0, err
	}
	in := Info{Layout: NewLayout(hdr.Width, hdr.Height, o.TileSize), Transparent: hdr.Transparent}
	if in.Digest, err = digest(ctx, src, size); err != nil {
		return Info{}, 0, err
	}
	in.PreviewLevel = in.previewLevel(o.PreviewSize)
	thumbFrom := in.thumbSource(o.ThumbSize)

	pw := newPackWriter(dst, in.entries())
	enc := newEncoders(ctx, o, func(entry int, data []byte, f Format) error { return pw.put(entry, data, f) })
	tiler, err := NewTiler(in.Layout, func(t Tile) error {
		return enc.submit(entryTiles+in.tileIndex(t.Z, t.X, t.Y), t.Img, t.Release)
	}, TilerOptions{Buffers: 2 * o.Workers, Keep: []int{in.PreviewLevel, thumbFrom}, MaxBandBytes: o.MaxBandBytes, ScratchDir: o.ScratchDir})
	if err != nil {
		_ = enc.wait() // nothing was submitted; err is the one to report
		return Info{}, 0, err
	}
	defer tiler.Close()
	if err := decode(ctx, dec, tiler, o.Progress); err != nil {
		enc.stop(err)
		_ = enc.wait() // err is the one to report
		return Info{}, 0, err
	}
	preview := tiler.Level(in.PreviewLevel)
	in.PreviewWidth, in.PreviewHeight = preview.Rect.Dx(), preview.Rect.Dy()
	src0 := tiler.Level(thumbFrom)
	tw, th := scaledSize(src0.Rect.Dx(), src0.Rect.Dy(), o.ThumbSize)
	thumb := resize(src0, tw, th)
	in.ThumbWidth, in.ThumbHeight = tw, th
	_ = enc.submit(entryPrev, preview, func() {}) // an error shows in wait
	_ = enc.submit(entryThumb, thumb, func() {})
	if err := enc.wait(); err != nil {
		return Info{}, 0, err
	}
	n, err := pw.finish(in)
	return in, n, err
}

// decode feeds the picture's rows to the tiler.
func decode(ctx context.Context, dec *pngstream.Decoder, t *Tiler, progress func(int, int)) error {
	h := dec.Header()
	row := make([]byte, 4*h.Width)
	for y := 0; ; y++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := dec.Next(row)
		if err == io.EOF {
			break
		}
		if err != nil {
			return pictureError(err)
		}
		if err := t.WriteRow(row); err != nil {
			return err
		}
		if progress != nil && ((y+1)%DefaultTileSize == 0 || y+1 == h.Height) {
			progress(y+1, h.Height)
		}
	}
	if !t.Done() {
		return errors.New("pyramid: the decoder ended early") // cannot happen: Next checks
	}
	return nil
}

func pictureError(err error) error {
	if errors.Is(err, pngstream.ErrFormat) {
		return fmt.Errorf("%w: %w", ErrPicture, err)
	}
	return err
}

// digest is the SHA-256 of src[0:size].
func digest(ctx context.Context, src io.ReaderAt, size int64) ([32]byte, error) {
	h := sha256.New()
	buf := make([]byte, 256<<10)
	r := io.NewSectionReader(src, 0, size)
	for {
		if err := ctx.Err(); err != nil {
			return [32]byte{}, err
		}
		n, err := r.Read(buf)
		h.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			return [32]byte{}, fmt.Errorf("read the picture: %w", err)
		}
	}
	var d [32]byte
	h.Sum(d[:0])
	return d, nil
}

// encoders encode images on Workers goroutines and hand the bytes to put, one at a
// time.
type encoders struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	jobs   chan encodeJob
	wg     sync.WaitGroup
	mu     sync.Mutex // serialises put
	put    func(entry int, data []byte, f Format) error
}

type encodeJob struct {
	entry int
	img   *image.NRGBA
	done  func()
}

func newEncoders(ctx context.Context, o Options, put func(int, []byte, Format) error) *encoders {
	e := &encoders{jobs: make(chan encodeJob), put: put}
	e.ctx, e.cancel = context.WithCancelCause(ctx)
	for range o.Workers {
		e.wg.Go(func() {
			var buf bytes.Buffer
			pngEnc := png.Encoder{CompressionLevel: png.BestSpeed, BufferPool: &pngBuffers{}}
			for j := range e.jobs {
				if e.ctx.Err() == nil {
					if err := e.encode(&buf, &pngEnc, j, o); err != nil {
						e.cancel(err)
					}
				}
				j.done()
			}
		})
	}
	return e
}

func (e *encoders) encode(buf *bytes.Buffer, pngEnc *png.Encoder, j encodeJob, o Options) error {
	buf.Reset()
	f := PNG
	if !o.PNGOnly && opaque(j.img) {
		f = JPEG
		// Opaque, the pixels are the same premultiplied: jpeg's fast path for RGBA.
		rgba := &image.RGBA{Pix: j.img.Pix, Stride: j.img.Stride, Rect: j.img.Rect}
		if err := jpeg.Encode(buf, rgba, &jpeg.Options{Quality: o.Quality}); err != nil {
			return err
		}
	} else if err := pngEnc.Encode(buf, j.img); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.put(j.entry, buf.Bytes(), f)
}

// submit queues img for entry; done runs once the encoder is through with it.
func (e *encoders) submit(entry int, img *image.NRGBA, done func()) error {
	select {
	case e.jobs <- encodeJob{entry, img, done}:
		return nil
	case <-e.ctx.Done():
		done()
		return context.Cause(e.ctx)
	}
}

// stop makes the encoders skip what is queued.
func (e *encoders) stop(err error) { e.cancel(err) }

// wait ends the encoders and returns the first error of an encoding or a write.
func (e *encoders) wait() error {
	close(e.jobs)
	e.wg.Wait()
	err := context.Cause(e.ctx)
	e.cancel(nil)
	return err
}

// opaque reports whether every pixel of img has full alpha.
func opaque(img *image.NRGBA) bool {
	w := img.Rect.Dx()
	for y := range img.Rect.Dy() {
		row := img.Pix[y*img.Stride : y*img.Stride+4*w]
		for i := 3; i < len(row); i += 4 {
			if row[i] != 0xff {
				return false
			}
		}
	}
	return true
}

// pngBuffers keeps one encoder buffer per worker.
type pngBuffers struct{ b *png.EncoderBuffer }

func (p *pngBuffers) Get() *png.EncoderBuffer  { return p.b }
func (p *pngBuffers) Put(b *png.EncoderBuffer) { p.b = b }

package pyramid

import (
	"fmt"
	"image"
	"os"
)

// band holds the rows of one level's current band of tiles.
type band interface {
	setRow(i int, row []byte) error
	// readTile copies columns x0 … x0+w-1 of rows 0 … h-1 into dst.
	readTile(x0, w, h int, dst *image.NRGBA) error
	close()
}

// memBand keeps the band in memory.
type memBand struct {
	pix    []byte
	stride int
}

func newMemBand(width, rows int) *memBand {
	return &memBand{pix: make([]byte, 4*width*rows), stride: 4 * width}
}

func (b *memBand) setRow(i int, row []byte) error {
	copy(b.pix[i*b.stride:(i+1)*b.stride], row)
	return nil
}

func (b *memBand) readTile(x0, w, h int, dst *image.NRGBA) error {
	for y := range h {
		copy(dst.Pix[y*dst.Stride:y*dst.Stride+4*w], b.pix[y*b.stride+4*x0:])
	}
	return nil
}

func (b *memBand) close() { b.pix = nil }

// fileBand keeps the band in a scratch file: for very wide pictures, whose bands
// would take more memory than they are worth (the page cache holds them anyway).
type fileBand struct {
	f      *os.File
	stride int64
}

func (b *fileBand) setRow(i int, row []byte) error {
	if _, err := b.f.WriteAt(row[:b.stride], int64(i)*b.stride); err != nil {
		return fmt.Errorf("scratch file: %w", err)
	}
	return nil
}

func (b *fileBand) readTile(x0, w, h int, dst *image.NRGBA) error {
	for y := range h {
		if _, err := b.f.ReadAt(dst.Pix[y*dst.Stride:y*dst.Stride+4*w], int64(y)*b.stride+4*int64(x0)); err != nil {
			return fmt.Errorf("scratch file: %w", err)
		}
	}
	return nil
}

func (b *fileBand) close() { _ = b.f.Close() } // scratch: nothing to keep

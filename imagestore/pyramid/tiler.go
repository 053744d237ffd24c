package pyramid

import (
	"errors"
	"image"
	"os"
)

// Tile is one tile of a level, in a buffer of the tiler's. Its receiver must call
// Release once done with Img (the tiler waits for a free buffer when all are out).
type Tile struct {
	Z, X, Y int
	Img     *image.NRGBA
	buf     *image.NRGBA
	free    chan *image.NRGBA
}

// Release gives the tile's buffer back to the tiler.
func (t Tile) Release() { t.free <- t.buf }

// TilerOptions tune a Tiler.
type TilerOptions struct {
	// Buffers is how many tiles may be out (emitted, not released) at once; default 1.
	Buffers int
	// Keep lists levels whose whole image Levels returns at the end (the preview's
	// and the thumbnail's).
	Keep []int
	// MaxBandBytes bounds the memory of the bands: levels whose bands do not fit go to
	// scratch files in ScratchDir (default 32 MiB; with no ScratchDir, all stay in
	// memory).
	MaxBandBytes int64
	ScratchDir   string
}

// Tiler cuts a picture given row by row, top to bottom, into the tiles of every
// level of its Layout. Emit receives each tile as soon as its band is complete.
type Tiler struct {
	layout Layout
	emit   func(Tile) error
	levels []*level
	free   chan *image.NRGBA
}

// level is one level's state.
type level struct {
	z             int
	width, height int
	y             int // rows received
	band          band
	pending       []byte // an even row waiting for its pair, for the level below
	hasPending    bool
	down          []byte // the row for the level below
	whole         *image.NRGBA
}

// NewTiler starts the pyramid of layout.
func NewTiler(layout Layout, emit func(Tile) error, o TilerOptions) (*Tiler, error) {
	t := &Tiler{layout: layout, emit: emit, free: make(chan *image.NRGBA, max(1, o.Buffers))}
	for range max(1, o.Buffers) {
		t.free <- image.NewNRGBA(image.Rect(0, 0, layout.TileSize, layout.TileSize))
	}
	if o.MaxBandBytes <= 0 {
		o.MaxBandBytes = 32 << 20
	}
	var inMemory int64
	for z := range layout.Levels {
		w, h := layout.LevelSize(z)
		lv := &level{z: z, width: w, height: h}
		rows := min(h, layout.TileSize)
		size := 4 * int64(w) * int64(rows)
		// The coarse levels first: the few widest go to files when they must.
		if inMemory+size <= o.MaxBandBytes || o.ScratchDir == "" {
			lv.band = newMemBand(w, rows)
			inMemory += size
		} else {
			f, err := scratch(o.ScratchDir)
			if err != nil {
				t.Close()
				return nil, err
			}
			lv.band = &fileBand{f: f, stride: 4 * int64(w)}
		}
		if z > 0 {
			lv.pending = make([]byte, 4*w)
			lv.down = make([]byte, 4*((w+1)/2))
		}
		for _, k := range o.Keep {
			if k == z {
				lv.whole = image.NewNRGBA(image.Rect(0, 0, w, h))
			}
		}
		t.levels = append(t.levels, lv)
	}
	return t, nil
}

// scratch is a new file in dir that only this process can reach: removed at once.
func scratch(dir string) (*os.File, error) {
	f, err := os.CreateTemp(dir, ".tmp-band-*")
	if err != nil {
		return nil, err
	}
	_ = os.Remove(f.Name()) // open, it lives on until closed; the sweep takes it otherwise
	return f, nil
}

// WriteRow takes the picture's next row: 4 bytes (RGBA, not premultiplied) a pixel.
func (t *Tiler) WriteRow(row []byte) error {
	return t.add(t.levels[len(t.levels)-1], row)
}

// add gives level lv its next row and passes rows down as pairs complete.
func (t *Tiler) add(lv *level, row []byte) error {
	if lv.y >= lv.height {
		return errors.New("pyramid: more rows than the picture has")
	}
	ts := t.layout.TileSize
	if err := lv.band.setRow(lv.y%ts, row); err != nil {
		return err
	}
	if lv.whole != nil {
		copy(lv.whole.Pix[lv.y*lv.whole.Stride:], row[:4*lv.width])
	}
	lv.y++
	if lv.y%ts == 0 || lv.y == lv.height {
		if err := t.emitBand(lv); err != nil {
			return err
		}
	}
	if lv.z == 0 {
		return nil
	}
	below := t.levels[lv.z-1]
	switch {
	case !lv.hasPending && lv.y < lv.height:
		copy(lv.pending, row[:4*lv.width])
		lv.hasPending = true
		return nil
	case !lv.hasPending: // the last row, unpaired
		halveRows(lv.down, row, nil, lv.width)
	default:
		halveRows(lv.down, lv.pending, row, lv.width)
		lv.hasPending = false
	}
	return t.add(below, lv.down)
}

// emitBand sends the tiles of lv's current band.
func (t *Tiler) emitBand(lv *level) error {
	ts := t.layout.TileSize
	y := (lv.y - 1) / ts
	cols, _ := t.layout.Grid(lv.z)
	for x := range cols {
		_, _, w, h := t.layout.TileRect(lv.z, x, y)
		buf := <-t.free
		img := &image.NRGBA{Pix: buf.Pix[:(h-1)*buf.Stride+4*w], Stride: buf.Stride, Rect: image.Rect(0, 0, w, h)}
		if err := lv.band.readTile(x*ts, w, h, img); err != nil {
			t.free <- buf
			return err
		}
		if err := t.emit(Tile{Z: lv.z, X: x, Y: y, Img: img, buf: buf, free: t.free}); err != nil {
			return err
		}
	}
	return nil
}

// Done reports whether every row of the picture has arrived.
func (t *Tiler) Done() bool {
	for _, lv := range t.levels {
		if lv.y != lv.height {
			return false
		}
	}
	return true
}

// Level is the whole image of a level named in TilerOptions.Keep, once Done.
func (t *Tiler) Level(z int) *image.NRGBA { return t.levels[z].whole }

// Close releases the scratch files.
func (t *Tiler) Close() {
	for _, lv := range t.levels {
		if lv.band != nil {
			lv.band.close()
		}
	}
}

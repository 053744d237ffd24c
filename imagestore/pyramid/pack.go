package pyramid

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// A pack holds a picture's thumbnail, preview and tiles in one file, so that it is
// written under a temporary name and appears complete with one rename:
//
//	header   headerSize bytes: magic, format, layout, sizes, the picture's digest
//	index    entrySize bytes per entry: offset, length, format
//	blobs    the encoded images, in the order they were made
//
// Entry 0 is the thumbnail, 1 the preview, then the tiles level by level, row by row
// (Layout.tileIndex). Integers are big-endian.

const (
	packMagic   = "gdpyrmd\n"
	packFormat  = 1
	headerSize  = 128
	entrySize   = 16
	entryThumb  = 0
	entryPrev   = 1
	entryTiles  = 2
	maxPackSide = 1 << 20
)

// Version changes whenever Build's output would for the same picture (the pack
// format, the encoders' settings, the sizes): URLs and ETags carry it, so that
// browsers never keep an old tile under a new name.
const Version = 1

// Format is how an image in a pack is encoded.
type Format uint8

// The formats.
const (
	PNG  Format = 1
	JPEG Format = 2
)

// ContentType is the media type of f.
func (f Format) ContentType() string {
	if f == JPEG {
		return "image/jpeg"
	}
	return "image/png"
}

// ErrBadPack: the file is not a complete pack of this format.
var ErrBadPack = errors.New("not a pyramid pack")

// Info describes a built pyramid.
type Info struct {
	Layout
	// Transparent: the picture has an alpha channel or a tRNS chunk.
	Transparent bool
	// Digest is the SHA-256 of the picture's bytes.
	Digest [32]byte
	// ThumbWidth … PreviewHeight are the sizes of the thumbnail and the preview;
	// PreviewLevel is the level the preview is.
	ThumbWidth, ThumbHeight     int
	PreviewWidth, PreviewHeight int
	PreviewLevel                int
}

func (in Info) entries() int { return entryTiles + in.Tiles() }

func (in Info) marshal() []byte {
	b := make([]byte, headerSize)
	copy(b, packMagic)
	be := binary.BigEndian
	for i, v := range []int{packFormat, in.Width, in.Height, in.TileSize, in.Levels, in.entries(), boolInt(in.Transparent),
		in.ThumbWidth, in.ThumbHeight, in.PreviewWidth, in.PreviewHeight, in.PreviewLevel} {
		be.PutUint32(b[8+4*i:], uint32(v))
	}
	copy(b[64:96], in.Digest[:])
	return b
}

func unmarshalInfo(b []byte) (Info, error) {
	if len(b) < headerSize || string(b[:8]) != packMagic {
		return Info{}, fmt.Errorf("%w: no pack header", ErrBadPack)
	}
	v := func(i int) int { return int(binary.BigEndian.Uint32(b[8+4*i:])) }
	if v(0) != packFormat {
		return Info{}, fmt.Errorf("%w: format %d, want %d", ErrBadPack, v(0), packFormat)
	}
	in := Info{Transparent: v(6) != 0, ThumbWidth: v(7), ThumbHeight: v(8), PreviewWidth: v(9), PreviewHeight: v(10), PreviewLevel: v(11)}
	w, h, ts := v(1), v(2), v(3)
	if w <= 0 || h <= 0 || w > maxPackSide || h > maxPackSide || ts <= 0 || ts > 4096 {
		return Info{}, fmt.Errorf("%w: bad layout", ErrBadPack)
	}
	in.Layout = NewLayout(w, h, ts)
	if in.Levels != v(4) || in.entries() != v(5) || in.PreviewLevel < 0 || in.PreviewLevel >= in.Levels {
		return Info{}, fmt.Errorf("%w: inconsistent layout", ErrBadPack)
	}
	copy(in.Digest[:], b[64:96])
	return in, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Blob is where one image lies in a pack.
type Blob struct {
	Offset int64
	Length int64
	Format Format
}

// packWriter writes a pack into w: blobs as they come, the index and header last.
type packWriter struct {
	w     io.WriterAt
	index []byte
	next  int64
}

func newPackWriter(w io.WriterAt, entries int) *packWriter {
	return &packWriter{w: w, index: make([]byte, entries*entrySize), next: headerSize + int64(entries)*entrySize}
}

func (p *packWriter) put(entry int, data []byte, f Format) error {
	if _, err := p.w.WriteAt(data, p.next); err != nil {
		return err
	}
	e := p.index[entry*entrySize:]
	binary.BigEndian.PutUint64(e, uint64(p.next))
	binary.BigEndian.PutUint32(e[8:], uint32(len(data)))
	e[12] = byte(f)
	p.next += int64(len(data))
	return nil
}

func (p *packWriter) finish(in Info) (int64, error) {
	for i := range len(p.index) / entrySize {
		if p.index[i*entrySize+12] == 0 {
			return 0, fmt.Errorf("pyramid: entry %d was never written", i)
		}
	}
	if _, err := p.w.WriteAt(p.index, headerSize); err != nil {
		return 0, err
	}
	if _, err := p.w.WriteAt(in.marshal(), 0); err != nil {
		return 0, err
	}
	return p.next, nil
}

// Pack reads a pack.
type Pack struct {
	r    io.ReaderAt
	size int64
	Info Info
}

// OpenPack reads the header of the pack in r[0:size].
func OpenPack(r io.ReaderAt, size int64) (*Pack, error) {
	b := make([]byte, headerSize)
	if _, err := r.ReadAt(b, 0); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: truncated", ErrBadPack)
		}
		return nil, err
	}
	in, err := unmarshalInfo(b)
	if err != nil {
		return nil, err
	}
	if size < headerSize+int64(in.entries())*entrySize {
		return nil, fmt.Errorf("%w: truncated index", ErrBadPack)
	}
	return &Pack{r: r, size: size, Info: in}, nil
}

// Thumb is the thumbnail; Preview the preview.
func (p *Pack) Thumb() (Blob, error)   { return p.entry(entryThumb) }
func (p *Pack) Preview() (Blob, error) { return p.entry(entryPrev) }

// Tile is tile x, y of level z; ok is false when there is no such tile.
func (p *Pack) Tile(z, x, y int) (b Blob, ok bool, err error) {
	i := p.Info.tileIndex(z, x, y)
	if i < 0 {
		return Blob{}, false, nil
	}
	b, err = p.entry(entryTiles + i)
	return b, err == nil, err
}

// Open reads b's bytes.
func (p *Pack) Open(b Blob) *io.SectionReader { return io.NewSectionReader(p.r, b.Offset, b.Length) }

func (p *Pack) entry(i int) (Blob, error) {
	var e [entrySize]byte
	if _, err := p.r.ReadAt(e[:], headerSize+int64(i)*entrySize); err != nil {
		return Blob{}, err
	}
	b := Blob{Offset: int64(binary.BigEndian.Uint64(e[:])), Length: int64(binary.BigEndian.Uint32(e[8:])), Format: Format(e[12])}
	if (b.Format != PNG && b.Format != JPEG) || b.Offset < headerSize || b.Offset > p.size || b.Length > p.size-b.Offset {
		return Blob{}, fmt.Errorf("%w: bad entry %d", ErrBadPack, i)
	}
	return b, nil
}

package imagestore

import (
	"bufio"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
)

// VerifyPNG reads a whole PNG file and checks it as a decoder would, without holding
// its pixels: the header (as CheckPNG), every chunk's CRC, the palette a paletted
// image needs, and the compressed pixel data, inflated through a 32 KiB window and
// counted against what the header's size, depth and interlacing call for, each row's
// filter type checked. It costs a few buffers whatever the image's size, where
// image/png.Decode holds every pixel (800 MB for 10000×10000 at 16 bits per channel).
// An image of more than maxPixels pixels is refused before its data is read.
//
// Errors are ErrNotPNG or ErrInvalidPNG with what is wrong, or r's own error.
func VerifyPNG(r io.Reader, maxPixels int64) (width, height int, err error) {
	rr := &readErr{r: r}
	v := &pngVerifier{r: bufio.NewReaderSize(rr, 32<<10), crc: crc32.NewIEEE()}
	var sig [len(pngSignature)]byte
	n, _ := io.ReadFull(v.r, sig[:])
	if rr.err != nil {
		return 0, 0, rr.err
	}
	if string(sig[:n]) != pngSignature {
		return 0, 0, fmt.Errorf("%w: %s", ErrNotPNG, sniff(sig[:n]))
	}
	err = v.chunks(maxPixels)
	if rr.err != nil {
		return 0, 0, rr.err
	}
	if err != nil {
		return 0, 0, err
	}
	return v.width, v.height, nil
}

func invalidPNG(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidPNG}, args...)...)
}

// pngChannels is the number of samples per pixel of each colour type.
var pngChannels = [7]int{0: 1, 2: 3, 3: 1, 4: 2, 6: 4}

// The order chunks must come in, as image/png checks it.
type pngStage int

const (
	stageStart pngStage = iota
	stageHeader
	stagePalette
	stageTransparency
	stageData
)

type pngVerifier struct {
	r   *bufio.Reader
	crc hash.Hash32
	buf [4 << 10]byte // for what is skipped (io.Discard's pooled buffers come and go)

	width, height int
	depth, colour int
	interlaced    bool
	paletteLen    uint32

	// The chunk being read: its type and the data left of it.
	typ  string
	left uint32
}

// next reads the next chunk's length and type; the CRC starts with the type.
func (v *pngVerifier) next() error {
	var head [8]byte
	if _, err := io.ReadFull(v.r, head[:]); err != nil {
		return invalidPNG("the file ends before its IEND chunk")
	}
	length := binary.BigEndian.Uint32(head[:4])
	if length > 0x7fffffff {
		return invalidPNG("a chunk of %d bytes", length)
	}
	v.typ, v.left = string(head[4:]), length
	v.crc.Reset()
	v.crc.Write(head[4:])
	return nil
}

// Read reads the current chunk's data (at most what is left of it).
func (v *pngVerifier) Read(p []byte) (int, error) {
	if v.left == 0 {
		return 0, io.EOF
	}
	if uint32(len(p)) > v.left {
		p = p[:v.left]
	}
	n, err := v.r.Read(p)
	v.crc.Write(p[:n])
	v.left -= uint32(n)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// skip reads and drops n bytes of r.
func (v *pngVerifier) skip(r io.Reader, n int64) error {
	for n > 0 {
		k, err := io.ReadFull(r, v.buf[:min(n, int64(len(v.buf)))])
		n -= int64(k)
		if err != nil {
			return err
		}
	}
	return nil
}

// end reads the rest of the chunk's data and checks its CRC.
func (v *pngVerifier) end() error {
	if err := v.skip(v, int64(v.left)); err != nil {
		return invalidPNG("chunk %s is cut short", printableType(v.typ))
	}
	var sum [4]byte
	if _, err := io.ReadFull(v.r, sum[:]); err != nil {
		return invalidPNG("chunk %s is cut short", printableType(v.typ))
	}
	if binary.BigEndian.Uint32(sum[:]) != v.crc.Sum32() {
		return invalidPNG("chunk %s is damaged (its checksum does not match)", printableType(v.typ))
	}
	return nil
}

func chunkOrder(typ string) error {
	return invalidPNG("chunk %s out of order", printableType(typ))
}

func (v *pngVerifier) chunks(maxPixels int64) error {
	stage := stageStart
	read := true // false: pixels read the current chunk's header already
	for {
		if read {
			if err := v.next(); err != nil {
				return err
			}
		}
		read = true
		switch v.typ {
		case "IHDR":
			if stage != stageStart {
				return chunkOrder(v.typ)
			}
			if err := v.header(maxPixels); err != nil {
				return err
			}
			stage = stageHeader
			continue // header checked the CRC
		case "PLTE":
			if stage != stageHeader {
				return chunkOrder(v.typ)
			}
			if err := v.palette(); err != nil {
				return err
			}
			stage = stagePalette
		case "tRNS":
			switch {
			case v.colour == 3 && stage != stagePalette,
				v.colour == 2 && stage != stageHeader && stage != stagePalette,
				v.colour != 3 && v.colour != 2 && stage != stageHeader:
				return chunkOrder(v.typ)
			}
			if err := v.transparency(); err != nil {
				return err
			}
			stage = stageTransparency
		case "IDAT":
			if stage < stageHeader || stage == stageHeader && v.colour == 3 {
				return chunkOrder(v.typ)
			}
			if stage == stageData {
				break // trailing IDAT chunks are ignored, as image/png does
			}
			stage = stageData
			if err := v.pixels(); err != nil {
				return err
			}
			read = false
			continue
		case "IEND":
			if stage != stageData {
				return chunkOrder(v.typ)
			}
			if v.left != 0 {
				return invalidPNG("an IEND chunk with data")
			}
			return v.end()
		default:
			// Other chunks are skipped, before the header too (as image/png does).
		}
		if err := v.end(); err != nil {
			return err
		}
	}
}

// header reads IHDR and checks it (as image/png does) and its CRC.
func (v *pngVerifier) header(maxPixels int64) error {
	if v.left != 13 {
		return invalidPNG("a header (IHDR) of %d bytes", v.left)
	}
	var ihdr [13]byte
	if _, err := io.ReadFull(v, ihdr[:]); err != nil {
		return invalidPNG("the header is truncated")
	}
	if err := v.end(); err != nil {
		return err
	}
	w, h := int32(binary.BigEndian.Uint32(ihdr[0:4])), int32(binary.BigEndian.Uint32(ihdr[4:8]))
	depth, colour := ihdr[8], ihdr[9]
	ok := colour <= 6 && pngChannels[colour] != 0
	switch depth {
	case 1, 2, 4:
		ok = ok && (colour == 0 || colour == 3)
	case 8:
	case 16:
		ok = ok && colour != 3
	default:
		ok = false
	}
	switch {
	case w <= 0 || h <= 0:
		return invalidPNG("width and height must be positive, got %d×%d", w, h)
	case !ok:
		return invalidPNG("unsupported bit depth %d with colour type %d", depth, colour)
	case ihdr[10] != 0 || ihdr[11] != 0:
		return invalidPNG("unsupported compression or filter method")
	case ihdr[12] > 1:
		return invalidPNG("invalid interlace method")
	}
	if int64(w)*int64(h) > maxPixels {
		return invalidPNG("%d×%d pixels is more than the %d million allowed", w, h, maxPixels/1_000_000)
	}
	v.width, v.height = int(w), int(h)
	v.depth, v.colour, v.interlaced = int(depth), int(colour), ihdr[12] == 1
	return nil
}

// palette checks PLTE's length against the colour type, as image/png does.
func (v *pngVerifier) palette() error {
	n := v.left / 3
	switch v.colour {
	case 3:
		if v.left%3 != 0 || n == 0 || n > 256 || n > 1<<v.depth {
			return invalidPNG("a palette (PLTE) of %d bytes", v.left)
		}
		v.paletteLen = n
	case 2, 6:
		// A suggested palette, ignored.
	default:
		return invalidPNG("a palette (PLTE) in an image without colour")
	}
	return nil
}

// transparency checks tRNS's length against the colour type, as image/png does.
func (v *pngVerifier) transparency() error {
	switch {
	case v.colour == 0 && v.left != 2, v.colour == 2 && v.left != 6, v.colour == 3 && v.left > 256:
		return invalidPNG("a transparency chunk (tRNS) of %d bytes", v.left)
	case v.colour == 4 || v.colour == 6:
		return invalidPNG("a transparency chunk (tRNS) in an image with an alpha channel")
	}
	return nil
}

// pixels inflates the data of the run of IDAT chunks that starts with the current
// one and checks it row by row; it returns with the first chunk after the run read
// (its type in v.typ).
func (v *pngVerifier) pixels() error {
	idat := &idatReader{v: v}
	z, err := zlib.NewReader(idat)
	if err != nil {
		return v.dataErr(idat, err)
	}
	bits := int64(pngChannels[v.colour] * v.depth)
	rows := []struct{ w, h int64 }{{int64(v.width), int64(v.height)}}
	if v.interlaced {
		rows = rows[:0]
		for _, p := range [7][4]int64{{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4}, {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}} {
			w := (int64(v.width) - p[0] + p[2] - 1) / p[2]
			h := (int64(v.height) - p[1] + p[3] - 1) / p[3]
			if w > 0 && h > 0 {
				rows = append(rows, struct{ w, h int64 }{w, h})
			}
		}
	}
	var filter [1]byte
	for _, pass := range rows {
		rowBytes := (pass.w*bits + 7) / 8
		for range pass.h {
			if _, err := io.ReadFull(z, filter[:]); err != nil {
				return v.dataErr(idat, err)
			}
			if filter[0] > 4 {
				return invalidPNG("a row with the unknown filter type %d", filter[0])
			}
			if err := v.skip(z, rowBytes); err != nil {
				return v.dataErr(idat, err)
			}
		}
	}
	// The stream must end here; zlib checks its checksum at the end.
	n, err := 0, error(nil)
	for i := 0; n == 0 && err == nil; i++ {
		if i == 100 {
			return invalidPNG("the image data is damaged (%v)", io.ErrNoProgress)
		}
		n, err = z.Read(filter[:])
	}
	if n > 0 {
		return invalidPNG("more pixel data than the header calls for")
	}
	if err != io.EOF {
		return v.dataErr(idat, err)
	}
	if idat.err != nil {
		return idat.err
	}
	if !idat.done && v.left != 0 {
		return invalidPNG("more pixel data than the header calls for")
	}
	// On to the chunk after the data (further IDAT chunks are the caller's to skip).
	if !idat.done {
		if err := v.end(); err != nil {
			return err
		}
		return v.next()
	}
	return nil
}

func (v *pngVerifier) dataErr(idat *idatReader, err error) error {
	if idat.err != nil {
		return idat.err
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return invalidPNG("the image data ends early")
	}
	return invalidPNG("the image data is damaged (%v)", err)
}

// idatReader reads the data of a run of IDAT chunks as one stream, checking each
// chunk's CRC as it ends; after the run it has read the next chunk's header.
type idatReader struct {
	v    *pngVerifier
	done bool
	err  error
}

func (d *idatReader) Read(p []byte) (int, error) {
	for !d.done && d.v.left == 0 {
		if d.err = d.v.end(); d.err != nil {
			return 0, d.err
		}
		if d.err = d.v.next(); d.err != nil {
			return 0, d.err
		}
		d.done = d.v.typ != "IDAT"
	}
	if d.done {
		return 0, io.EOF
	}
	return d.v.Read(p)
}

// printableType is a chunk type as text, or in hex when it is not letters.
func printableType(t string) string {
	for i := 0; i < len(t); i++ {
		if c := t[i] | 0x20; c < 'a' || c > 'z' {
			return fmt.Sprintf("%x", t)
		}
	}
	return t
}

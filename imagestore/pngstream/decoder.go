package pngstream

import (
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// ErrFormat: the data is not a PNG that image/png could decode. Errors of the
// io.ReaderAt itself are returned as they are, not wrapped in it.
var ErrFormat = errors.New("invalid PNG")

func formatError(msg string) error { return fmt.Errorf("%w: %s", ErrFormat, msg) }

const signature = "\x89PNG\r\n\x1a\n"

// Colour types (PNG spec, section 11.2.2).
const (
	ctGrey      = 0
	ctTrue      = 2
	ctPalette   = 3
	ctGreyAlpha = 4
	ctTrueAlpha = 6
)

// Chunk stages, in the order the chunks must come (image/png's dsStart…).
const (
	stageStart = iota
	stageIHDR
	stagePLTE
	stageTRNS
	stageIDAT
)

// Header is what the IHDR, PLTE and tRNS chunks say.
type Header struct {
	Width, Height int
	BitDepth      int
	ColorType     int
	Interlaced    bool
	// Transparent: the picture has an alpha channel or a tRNS chunk, so some pixels
	// may be transparent.
	Transparent bool
}

// Decoder yields the rows of one PNG. Use it from one goroutine.
type Decoder struct {
	src    *source
	hdr    Header
	bitsPP int // bits per pixel
	// palette holds all 256 entries as image/png resolves them: PLTE's colours, opaque
	// black beyond them, tRNS's alphas.
	palette [256][4]byte
	// trns is the tRNS chunk of a grey or truecolour picture (useTrns), laid out as
	// image/png keeps it: grey's low byte scaled to 8 bits at depths below 8.
	trns    [6]byte
	useTrns bool
	idatAt  int64 // offset of the first IDAT chunk (its length field)

	passes []*pass // one, or one per non-empty Adam7 pass
	last   *pass   // the pass that reads the data to its end
	y      int
	err    error // sticky: io.EOF after the last row and the trailing chunks
}

// NewDecoder reads the chunks before the pixel data of the PNG in r[0:size] and
// checks them as image/png does.
func NewDecoder(r io.ReaderAt, size int64) (*Decoder, error) {
	d := &Decoder{src: &source{r: r, size: size}}
	s := d.src.at(0)
	var sig [len(signature)]byte
	if err := s.readFull(sig[:]); err != nil {
		return nil, d.wrap(err)
	}
	if string(sig[:]) != signature {
		return nil, formatError("not a PNG file")
	}
	if err := d.readHeader(s); err != nil {
		return nil, d.wrap(err)
	}
	return d, nil
}

// Header describes the picture.
func (d *Decoder) Header() Header { return d.hdr }

// Next decodes the next row into dst, which must hold 4 × Width bytes: red, green,
// blue, alpha (not premultiplied) of each pixel. After the last row it checks the
// rest of the file and returns io.EOF, or the error image/png would have found.
func (d *Decoder) Next(dst []byte) error {
	if d.err != nil {
		return d.err
	}
	if len(dst) < 4*d.hdr.Width {
		return fmt.Errorf("pngstream: a row needs %d bytes, got %d", 4*d.hdr.Width, len(dst))
	}
	if d.y == d.hdr.Height {
		d.err = io.EOF
		if err := d.finish(); err != nil {
			d.err = d.wrap(err)
		}
		return d.err
	}
	if err := d.row(dst[:4*d.hdr.Width]); err != nil {
		d.err = d.wrap(err)
		return d.err
	}
	d.y++
	return nil
}

// Row is the index of the row the next call to Next decodes.
func (d *Decoder) Row() int { return d.y }

func (d *Decoder) row(dst []byte) error {
	if d.passes == nil {
		if err := d.openPasses(); err != nil {
			return err
		}
	}
	if !d.hdr.Interlaced {
		p := d.passes[0]
		if err := p.next(d); err != nil {
			return err
		}
		d.convert(p.cr[1:], p.width, dst)
		return nil
	}
	// Adam7 is a partition of the pixels: the passes with a row at y fill row y.
	for _, p := range d.passes {
		if d.y%p.yf != p.yo {
			continue
		}
		if err := p.next(d); err != nil {
			return err
		}
		d.convert(p.cr[1:], p.width, p.px)
		for i := range p.width {
			x := p.xo + i*p.xf
			copy(dst[4*x:4*x+4], p.px[4*i:4*i+4])
		}
	}
	return nil
}

// wrap leaves the reader's own errors as they are and makes every other one a
// format error: whatever else goes wrong is the data's fault.
func (d *Decoder) wrap(err error) error {
	var re readError
	switch {
	case err == nil, errors.Is(err, ErrFormat):
		return err
	case errors.As(err, &re):
		return re.err
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return formatError("the data is truncated")
	default:
		return formatError(err.Error())
	}
}

// readHeader parses the chunks up to the first IDAT, with image/png's ordering rules.
func (d *Decoder) readHeader(s *stream) error {
	stage := stageStart
	cb := false // the colour type and depth are known
	for {
		start := s.off
		length, typ, err := s.chunkHeader()
		if err != nil {
			return err
		}
		switch typ {
		case "IHDR":
			if stage != stageStart {
				return formatError("chunk out of order")
			}
			stage = stageIHDR
			if err := d.parseIHDR(s, length); err != nil {
				return err
			}
			cb = true
			continue
		case "PLTE":
			if stage != stageIHDR {
				return formatError("chunk out of order")
			}
			stage = stagePLTE
			if err := d.parsePLTE(s, length); err != nil {
				return err
			}
			continue
		case "tRNS":
			switch {
			case cb && d.hdr.ColorType == ctPalette:
				if stage != stagePLTE {
					return formatError("chunk out of order")
				}
			case cb && d.hdr.ColorType == ctTrue:
				if stage != stageIHDR && stage != stagePLTE {
					return formatError("chunk out of order")
				}
			case stage != stageIHDR:
				return formatError("chunk out of order")
			}
			stage = stageTRNS
			if err := d.parseTRNS(s, length); err != nil {
				return err
			}
			continue
		case "IDAT":
			if stage < stageIHDR || (stage == stageIHDR && d.hdr.ColorType == ctPalette) {
				return formatError("chunk out of order")
			}
			d.idatAt = start
			d.hdr.Transparent = d.useTrns || d.hdr.ColorType == ctGreyAlpha || d.hdr.ColorType == ctTrueAlpha ||
				(d.hdr.ColorType == ctPalette && d.paletteTransparent())
			return nil
		case "IEND":
			return formatError("chunk out of order")
		}
		if err := s.skipChunk(length); err != nil {
			return err
		}
	}
}

// paletteTransparent reports whether a palette entry has alpha below 255.
func (d *Decoder) paletteTransparent() bool {
	for _, c := range d.palette {
		if c[3] != 0xff {
			return true
		}
	}
	return false
}

func (d *Decoder) parseIHDR(s *stream, length uint32) error {
	if length != 13 {
		return formatError("bad IHDR length")
	}
	var b [13]byte
	if err := s.readFull(b[:]); err != nil {
		return err
	}
	s.crc.Write(b[:])
	switch {
	case b[10] != 0:
		return formatError("unsupported compression method")
	case b[11] != 0:
		return formatError("unsupported filter method")
	case b[12] > 1:
		return formatError("invalid interlace method")
	}
	w := int32(binary.BigEndian.Uint32(b[0:4]))
	h := int32(binary.BigEndian.Uint32(b[4:8]))
	if w <= 0 || h <= 0 {
		return formatError("non-positive dimension")
	}
	depth, ct := int(b[8]), int(b[9])
	channels := 0
	switch ct {
	case ctGrey:
		if depth == 1 || depth == 2 || depth == 4 || depth == 8 || depth == 16 {
			channels = 1
		}
	case ctPalette:
		if depth == 1 || depth == 2 || depth == 4 || depth == 8 {
			channels = 1
		}
	case ctTrue:
		channels = 3
	case ctGreyAlpha:
		channels = 2
	case ctTrueAlpha:
		channels = 4
	}
	if channels > 1 && depth != 8 && depth != 16 {
		channels = 0
	}
	if channels == 0 {
		return formatError(fmt.Sprintf("unsupported bit depth %d, color type %d", depth, ct))
	}
	d.hdr = Header{Width: int(w), Height: int(h), BitDepth: depth, ColorType: ct, Interlaced: b[12] == 1}
	d.bitsPP = depth * channels
	for i := range d.palette {
		d.palette[i] = [4]byte{0, 0, 0, 0xff}
	}
	return s.verifyCRC()
}

func (d *Decoder) parsePLTE(s *stream, length uint32) error {
	n := int(length / 3)
	if length%3 != 0 || n <= 0 || n > 256 || n > 1<<uint(d.hdr.BitDepth) {
		return formatError("bad PLTE length")
	}
	b := make([]byte, 3*n)
	if err := s.readFull(b); err != nil {
		return err
	}
	s.crc.Write(b)
	switch d.hdr.ColorType {
	case ctPalette:
		for i := range n {
			d.palette[i] = [4]byte{b[3*i], b[3*i+1], b[3*i+2], 0xff}
		}
	case ctTrue, ctTrueAlpha:
		// Optional for these, and ignorable (PNG spec, section 4.1.2).
	default:
		return formatError("PLTE, color type mismatch")
	}
	return s.verifyCRC()
}

func (d *Decoder) parseTRNS(s *stream, length uint32) error {
	var want uint32
	switch d.hdr.ColorType {
	case ctGrey:
		want = 2
	case ctTrue:
		want = 6
	case ctPalette:
		if length > 256 {
			return formatError("bad tRNS length")
		}
		want = length
	default:
		return formatError("tRNS, color type mismatch")
	}
	if length != want {
		return formatError("bad tRNS length")
	}
	b := make([]byte, length)
	if err := s.readFull(b); err != nil {
		return err
	}
	s.crc.Write(b)
	if d.hdr.ColorType == ctPalette {
		for i, a := range b {
			d.palette[i][3] = a
		}
		return s.verifyCRC()
	}
	copy(d.trns[:], b)
	if d.hdr.ColorType == ctGrey {
		// image/png compares 8-bit and narrower grey with the low byte, scaled to 8
		// bits in byte arithmetic.
		switch d.hdr.BitDepth {
		case 1:
			d.trns[1] *= 0xff
		case 2:
			d.trns[1] *= 0x55
		case 4:
			d.trns[1] *= 0x11
		}
	}
	d.useTrns = true
	return s.verifyCRC()
}

// finish is what image/png does after the pixels: the data must end there (the
// zlib checksum read), then the chunks up to IEND must be well formed.
func (d *Decoder) finish() error {
	if d.passes == nil {
		if err := d.openPasses(); err != nil {
			return err
		}
	}
	p := d.last
	n := 0
	var err error
	var one [1]byte
	for i := 0; n == 0 && err == nil; i++ {
		if i == 100 {
			return formatError(io.ErrNoProgress.Error())
		}
		n, err = p.zr.Read(one[:])
	}
	if err != nil && err != io.EOF {
		return err
	}
	if n != 0 || p.idat.length != 0 {
		return formatError("too much pixel data")
	}
	s := p.idat.s
	if err := s.verifyCRC(); err != nil {
		return err
	}
	for {
		length, typ, err := s.chunkHeader()
		if err != nil {
			return err
		}
		switch typ {
		case "IHDR", "PLTE", "tRNS":
			return formatError("chunk out of order")
		case "IEND":
			if length != 0 {
				return formatError("bad IEND length")
			}
			return s.verifyCRC()
		}
		// Anything else, trailing IDAT chunks included, is skipped.
		if err := s.skipChunk(length); err != nil {
			return err
		}
	}
}

// pass reads the rows of one Adam7 pass (or of the whole picture) from a reader of
// its own.
type pass struct {
	xf, yf, xo, yo int // Adam7 placement: x = xo + i·xf, y = yo + j·yf
	width, height  int
	skip           int64 // decompressed bytes of the passes before this one
	cr, pr         []byte
	px             []byte // the current row converted (interlaced pictures only)
	idat           *idatReader
	zr             io.ReadCloser
	rows           int // rows read
}

// adam7 are the seven passes (PNG spec, section 8.2).
var adam7 = [7][4]int{{8, 8, 0, 0}, {8, 8, 4, 0}, {4, 8, 0, 4}, {4, 4, 2, 0}, {2, 4, 0, 2}, {2, 2, 1, 0}, {1, 2, 0, 1}}

// openPasses sets up one reader per non-empty pass. Passes without pixels have no
// data at all (not even filter bytes), as image/png reads them.
func (d *Decoder) openPasses() error {
	scans := [][4]int{{1, 1, 0, 0}}
	if d.hdr.Interlaced {
		scans = adam7[:]
	}
	var before int64
	for _, sc := range scans {
		p := &pass{xf: sc[0], yf: sc[1], xo: sc[2], yo: sc[3]}
		p.width = (d.hdr.Width - p.xo + p.xf - 1) / p.xf
		p.height = (d.hdr.Height - p.yo + p.yf - 1) / p.yf
		if p.width == 0 || p.height == 0 {
			continue
		}
		rowSize := 1 + (int64(d.bitsPP)*int64(p.width)+7)/8
		p.skip = before
		before += rowSize * int64(p.height)
		p.cr, p.pr = make([]byte, rowSize), make([]byte, rowSize)
		if d.hdr.Interlaced {
			p.px = make([]byte, 4*p.width)
		}
		d.passes = append(d.passes, p)
	}
	d.last = d.passes[len(d.passes)-1]
	for _, p := range d.passes {
		if err := d.openPass(p); err != nil {
			return err
		}
	}
	return nil
}

func (d *Decoder) openPass(p *pass) error {
	s := d.src.at(d.idatAt)
	length, _, err := s.chunkHeader() // IDAT, as readHeader found
	if err != nil {
		return err
	}
	p.idat = &idatReader{s: s, length: length}
	zr, err := zlib.NewReader(p.idat)
	if err != nil {
		return err
	}
	p.zr = zr
	if p.skip > 0 {
		if _, err := io.CopyN(io.Discard, zr, p.skip); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return formatError("not enough pixel data")
			}
			return err
		}
	}
	return nil
}

// next reads and unfilters the pass's next row into p.cr.
func (p *pass) next(d *Decoder) error {
	p.cr, p.pr = p.pr, p.cr
	if p.rows == 0 {
		clear(p.pr)
	}
	if _, err := io.ReadFull(p.zr, p.cr); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return formatError("not enough pixel data")
		}
		return err
	}
	p.rows++
	bpp := (d.bitsPP + 7) / 8
	cdat, pdat := p.cr[1:], p.pr[1:]
	switch p.cr[0] {
	case 0:
	case 1:
		for i := bpp; i < len(cdat); i++ {
			cdat[i] += cdat[i-bpp]
		}
	case 2:
		for i, v := range pdat {
			cdat[i] += v
		}
	case 3:
		for i := 0; i < bpp; i++ {
			cdat[i] += pdat[i] / 2
		}
		for i := bpp; i < len(cdat); i++ {
			cdat[i] += uint8((int(cdat[i-bpp]) + int(pdat[i])) / 2)
		}
	case 4:
		filterPaeth(cdat, pdat, bpp)
	default:
		return formatError("bad filter type")
	}
	return nil
}

// filterPaeth undoes the Paeth filter (image/png's paeth.go).
func filterPaeth(cdat, pdat []byte, bpp int) {
	for i := range bpp {
		a, c := 0, 0
		for j := i; j < len(cdat); j += bpp {
			b := int(pdat[j])
			pa := b - c
			pb := a - c
			pc := abs(pa + pb)
			pa, pb = abs(pa), abs(pb)
			if pa <= pb && pa <= pc {
				// a stays
			} else if pb <= pc {
				a = b
			} else {
				a = c
			}
			a = (a + int(cdat[j])) & 0xff
			cdat[j] = uint8(a)
			c = b
		}
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// Package photo checks and prepares the photos gardeners attach to logs: JPEG or
// PNG, read from a file the upload streamed to, checked by their headers before
// anything is decoded (format, dimensions, and what decoding would cost in memory),
// then decoded once, turned upright by their EXIF orientation and encoded again,
// which leaves every byte of metadata behind (GPS position, camera, times, comments),
// along with a JPEG thumbnail.
//
// The header check reads a JPEG as image/jpeg does (see jpegHeader) and estimates
// what the decoder allocates as it allocates it; the decoder's own reading of the
// size must agree before it decodes (decode). A file that disagrees would otherwise
// show a small picture to the check and a huge one to the decoder.
//
// Re-encoding rather than cutting metadata segments out is a choice: the stored
// picture then holds nothing the encoder did not write (no EXIF, XMP, IPTC, ICC,
// comments, or data after the image), looks upright in any viewer whether or not it
// reads EXIF, and a hostile file (a polyglot, a truncated scan) becomes a plain
// picture. The price is one JPEG generation (quality 90) and one decode in memory,
// bounded by Limits.MaxPixels before it starts.
package photo

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
)

// Errors of a photo a client sent; the messages say what to fix.
var (
	// ErrNotPhoto: neither JPEG nor PNG.
	ErrNotPhoto = errors.New("the photo is not a JPEG or PNG image")
	// ErrBadPhoto: a JPEG or PNG that does not decode.
	ErrBadPhoto = errors.New("the photo is damaged")
	// ErrTooLarge: more pixels than Limits allow.
	ErrTooLarge = errors.New("the photo has too many pixels")
)

// Content types.
const (
	JPEG = "image/jpeg"
	PNG  = "image/png"
)

// Sniff names the format of a file from its first bytes: JPEG, PNG or "".
func Sniff(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte{0xFF, 0xD8, 0xFF}):
		return JPEG
	case bytes.HasPrefix(head, []byte(pngSignature)):
		return PNG
	}
	return ""
}

const pngSignature = "\x89PNG\r\n\x1a\n"

// Header is what a photo's header says.
type Header struct {
	ContentType string
	// Width and Height are as stored, before Orientation turns it.
	Width, Height int
	// Orientation is the EXIF orientation (1–8; 1 when there is none).
	Orientation int
	// DecodeBytes estimates the memory decoding takes.
	DecodeBytes int64
	// Kind names what sets the cost per pixel, for messages ("a progressive JPEG").
	Kind string
}

// Upright is the size of the picture once turned by its orientation.
func (h Header) Upright() (width, height int) {
	if h.Orientation >= 5 {
		return h.Height, h.Width
	}
	return h.Width, h.Height
}

// maxHeaderScan bounds how far into a file the header may lie (EXIF segments come
// before the JPEG frame header; ancillary chunks before a PNG's data).
const maxHeaderScan = 4 << 20

// MaxScans bounds the scans of a JPEG. Each scan of a progressive JPEG makes the
// decoder visit every block of its components again, so a small file of many scans
// would keep a core busy for an hour; encoders write at most a few dozen.
const MaxScans = 100

// ReadHeader reads a photo's header from r: its format, dimensions and orientation,
// without decoding any pixel. A JPEG is read to its end, to count its scans.
func ReadHeader(r io.Reader) (Header, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(8)
	switch Sniff(head) {
	case JPEG:
		return jpegHeader(&countingReader{r: br})
	case PNG:
		return pngHeader(bufio.NewReaderSize(io.LimitReader(br, maxHeaderScan), 64<<10))
	}
	return Header{}, fmt.Errorf("%w: %s", ErrNotPhoto, describe(head))
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r *bufio.Reader
	n int64
}

func (c *countingReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// skipTo discards the bytes before the next b (a scan's data, read in bulk).
func (c *countingReader) skipTo(b byte) error {
	for {
		buf, err := c.r.Peek(max(1, c.r.Buffered()))
		if i := bytes.IndexByte(buf, b); i >= 0 {
			return c.discard(i)
		}
		if err != nil {
			return err
		}
		if err := c.discard(len(buf)); err != nil {
			return err
		}
	}
}

func (c *countingReader) discard(n int) error {
	k, err := c.r.Discard(n)
	c.n += int64(k)
	return err
}

// describe names what a file that is not a photo looks like.
func describe(head []byte) string {
	switch {
	case len(head) == 0:
		return "the body is empty"
	case bytes.HasPrefix(head, []byte("GIF8")):
		return "it is a GIF"
	case len(head) >= 8 && string(head[4:8]) == "ftyp":
		return "it looks like HEIC or another ISO media file; send JPEG (phones convert when asked for compatibility)"
	case bytes.HasPrefix(head, []byte("RIFF")):
		return "it looks like WebP"
	}
	return "send the photo as JPEG or PNG"
}

// jpegHeader walks a JPEG's markers exactly as image/jpeg's decoder does (the same
// stray bytes skipped, "\xFF\x00" passed over, the same segments read by their
// lengths, the same markers refused), so that the frame header it reads is the one
// the decoder allocates by: a file that shows a small frame header to a reader that
// skips differently, and a huge one to the decoder, is read as the decoder reads it.
// It reads the EXIF orientation on the way and goes on to the end of the image,
// counting the scans.
func jpegHeader(br *countingReader) (Header, error) {
	h := Header{ContentType: JPEG, Orientation: 1}
	if err := br.discard(2); err != nil { // SOI
		return h, bad(err)
	}
	var f frame
	framed, scans := false, 0
	done := func() (Header, error) {
		h.Width, h.Height = f.width, f.height
		h.DecodeBytes, h.Kind = f.decodeBytes()
		return h, nil
	}
	for {
		marker, filled, err := nextMarker(br)
		if err != nil {
			if framed && errors.Is(err, io.EOF) {
				return done() // a truncated end is the decoder's to refuse
			}
			return h, bad(err)
		}
		switch {
		case marker == 0x00 && !filled:
			continue // "\xFF\x00" outside a scan: stray data, as the decoder reads it
		case marker == 0xD9: // EOI: the decoder stops here
			if !framed {
				return h, fmt.Errorf("%w: the JPEG has no frame header before its end", ErrBadPhoto)
			}
			return done()
		case marker >= 0xD0 && marker <= 0xD7:
			continue // RST: no length
		}
		if !framed && br.n > maxHeaderScan {
			return h, fmt.Errorf("%w: the JPEG's frame header lies more than %d MiB into the file", ErrBadPhoto, maxHeaderScan>>20)
		}
		var lenBuf [2]byte
		if _, err := io.ReadFull(br, lenBuf[:]); err != nil {
			return h, bad(err)
		}
		n := int(binary.BigEndian.Uint16(lenBuf[:])) - 2
		if n < 0 {
			return h, fmt.Errorf("%w: a JPEG segment of negative length", ErrBadPhoto)
		}
		switch {
		case marker == 0xC0 || marker == 0xC1 || marker == 0xC2:
			if framed {
				return h, fmt.Errorf("%w: the JPEG has two frame headers", ErrBadPhoto)
			}
			seg := make([]byte, n)
			if _, err := io.ReadFull(br, seg); err != nil {
				return h, bad(err)
			}
			if err := f.readHeader(seg, marker == 0xC2); err != nil {
				return h, err
			}
			framed = true
		case marker == 0xC3 || marker >= 0xC5 && marker <= 0xC7 || marker >= 0xC9 && marker <= 0xCB || marker >= 0xCD && marker <= 0xCF:
			return h, fmt.Errorf("%w: a lossless, hierarchical or arithmetic-coded JPEG; save it as a standard JPEG", ErrNotPhoto)
		case marker == 0xDA: // SOS: its header by its length, then the scan's data
			if !framed {
				return h, fmt.Errorf("%w: the JPEG has no frame header before its data", ErrBadPhoto)
			}
			if scans++; scans > MaxScans {
				return h, fmt.Errorf("%w: the JPEG has more than %d scans; save it again as a standard JPEG", ErrBadPhoto, MaxScans)
			}
			if err := br.discard(n); err != nil {
				return h, bad(err)
			}
		case marker == 0xE1 && !framed: // APP1: EXIF (or XMP, which is skipped)
			seg := make([]byte, n)
			if _, err := io.ReadFull(br, seg); err != nil {
				return h, bad(err)
			}
			if rest, ok := bytes.CutPrefix(seg, []byte("Exif\x00\x00")); ok {
				h.Orientation = exifOrientation(rest)
			}
		case (marker == 0xE0 || marker == 0xEE) && n >= 12:
			// APP0 (JFIF) and APP14 (Adobe) say whether the decoder converts three
			// components to RGB, wherever they are.
			seg := make([]byte, n)
			if _, err := io.ReadFull(br, seg); err != nil {
				return h, bad(err)
			}
			if marker == 0xE0 {
				f.jfif = string(seg[:5]) == "JFIF\x00"
			} else if string(seg[:5]) == "Adobe" {
				f.adobe, f.adobeTransform = true, seg[11]
			}
		case marker == 0xE0 && n >= 5:
			var id [5]byte
			if _, err := io.ReadFull(br, id[:]); err != nil {
				return h, bad(err)
			}
			f.jfif = string(id[:]) == "JFIF\x00"
			if err := br.discard(n - 5); err != nil {
				return h, bad(err)
			}
		case marker == 0xC4 || marker == 0xDB || marker == 0xDD || marker >= 0xE0 && marker <= 0xEF || marker == 0xFE:
			if err := br.discard(n); err != nil {
				return h, bad(err)
			}
		default: // the decoder knows no other marker
			return h, fmt.Errorf("%w: the JPEG has an unknown marker %02X", ErrBadPhoto, marker)
		}
	}
}

// nextMarker skips to the next marker as the decoder does (bytes other than 0xFF
// are stray data) and returns its code, and whether fill bytes (0xFF) came before
// it: "\xFF\x00" is stray data, "\xFF\xFF\x00" a marker 0 the decoder refuses.
func nextMarker(br *countingReader) (marker byte, filled bool, err error) {
	if err := br.skipTo(0xFF); err != nil {
		return 0, false, err
	}
	c, err := br.ReadByte() // the 0xFF
	if err == nil {
		c, err = br.ReadByte()
	}
	if err != nil {
		return 0, false, err
	}
	for c == 0xFF {
		filled = true
		if c, err = br.ReadByte(); err != nil {
			return 0, filled, err
		}
	}
	return c, filled, nil
}

// frame is a JPEG's frame header as image/jpeg reads it, and what else sets what
// the decoder allocates.
type frame struct {
	width, height int
	progressive   bool
	n             int     // components: 1, 3 or 4
	id            [4]byte // component identifiers
	h, v          [4]int  // sampling factors, as the decoder takes them
	// jfif and adobe (with its transform) are the APP0 and APP14 segments' say.
	jfif, adobe    bool
	adobeTransform byte
}

// readHeader reads SOF0/1/2 into f: precision, height, width, components with
// their sampling factors, refusing what image/jpeg refuses.
func (f *frame) readHeader(seg []byte, progressive bool) error {
	f.progressive = progressive
	if len(seg) < 6 {
		return fmt.Errorf("%w: a short JPEG frame header", ErrBadPhoto)
	}
	if seg[0] != 8 {
		return fmt.Errorf("%w: a JPEG of %d-bit precision; save it as a standard 8-bit JPEG", ErrNotPhoto, seg[0])
	}
	f.height, f.width = int(binary.BigEndian.Uint16(seg[1:3])), int(binary.BigEndian.Uint16(seg[3:5]))
	f.n = int(seg[5])
	if f.width == 0 || f.height == 0 || f.n == 0 || len(seg) < 6+3*f.n {
		return fmt.Errorf("%w: the JPEG's frame header has no size or components", ErrBadPhoto)
	}
	if f.n != 1 && f.n != 3 && f.n != 4 {
		return fmt.Errorf("%w: a JPEG of %d components", ErrBadPhoto, f.n)
	}
	for i := range f.n {
		f.id[i] = seg[6+3*i]
		hs, vs := int(seg[7+3*i]>>4), int(seg[7+3*i]&15)
		if hs < 1 || hs > 4 || vs < 1 || vs > 4 {
			return fmt.Errorf("%w: a JPEG component without sampling factors", ErrBadPhoto)
		}
		if f.n == 1 {
			hs, vs = 1, 1 // one component is never subsampled
		}
		f.h[i], f.v[i] = hs, vs
	}
	return nil
}

// decodeBytes is what image/jpeg allocates to decode the frame: the planes of its
// picture, whole blocks of whole MCUs (all of them full size in its "flex" mode for
// uncommon sampling), a progressive decode's coefficients (64 int32 per block), and
// the picture a CMYK or RGB one is converted into; with a word for its kind.
func (f frame) decodeBytes() (int64, string) {
	maxH, maxV := 1, 1
	for i := range f.n {
		maxH, maxV = max(maxH, f.h[i]), max(maxV, f.v[i])
	}
	mcus := ceilDiv(int64(f.width), int64(8*maxH)) * ceilDiv(int64(f.height), int64(8*maxV))
	blocks := func(i int) int64 { return mcus * int64(f.h[i]*f.v[i]) }
	var total int64
	if f.n == 1 {
		total = 64 * blocks(0)
	} else {
		luma := 64 * mcus * int64(maxH*maxV)
		chroma := luma
		hr, vr := maxH/f.h[1], maxV/f.v[1]
		standard := f.h[1] == f.h[2] && f.v[1] == f.v[2] && f.h[0] == maxH && f.v[0] == maxV &&
			maxH%f.h[1] == 0 && maxV%f.v[1] == 0 && slices.Contains([]int{0x11, 0x12, 0x21, 0x22, 0x41, 0x42}, hr<<4|vr)
		if standard {
			chroma = luma / int64(hr*vr)
		}
		total = luma + 2*chroma
		pixels := int64(f.width) * int64(f.height)
		switch {
		case f.n == 4:
			total += 64*blocks(3) + 4*pixels
		case !f.jfif && (f.adobe && f.adobeTransform == 0 || string(f.id[:3]) == "RGB"):
			total += 4 * pixels
		}
	}
	kind := "a JPEG"
	if f.progressive {
		kind = "a progressive JPEG"
		for i := range f.n {
			total += 256 * blocks(i)
		}
	}
	return total, kind
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// pngHeader reads IHDR and the chunks up to the first IDAT, for an eXIf orientation.
func pngHeader(br *bufio.Reader) (Header, error) {
	h := Header{ContentType: PNG, Orientation: 1, Kind: "a PNG"}
	grey, transparent := false, false
	if _, err := br.Discard(8); err != nil {
		return h, bad(err)
	}
	for first := true; ; first = false {
		var ch [8]byte
		if _, err := io.ReadFull(br, ch[:]); err != nil {
			return h, bad(err)
		}
		n, typ := binary.BigEndian.Uint32(ch[:4]), string(ch[4:8])
		if first != (typ == "IHDR") {
			return h, fmt.Errorf("%w: the PNG does not start with its header chunk", ErrBadPhoto)
		}
		if typ == "IDAT" || typ == "IEND" {
			return h, nil
		}
		if typ == "IHDR" && n != 13 {
			// Checked before its bytes are skipped: a huge one would leave the picture
			// without a size, and the check with nothing to weigh.
			return h, fmt.Errorf("%w: a PNG header chunk of %d bytes", ErrBadPhoto, n)
		}
		if n > 1<<20 {
			if _, err := br.Discard(int(n) + 4); err != nil {
				return h, bad(err)
			}
			continue
		}
		data := make([]byte, n+4)
		if _, err := io.ReadFull(br, data); err != nil {
			return h, bad(err)
		}
		if crc32.ChecksumIEEE(append(ch[4:8:8], data[:n]...)) != binary.BigEndian.Uint32(data[n:]) {
			return h, fmt.Errorf("%w: the PNG's %s chunk fails its checksum", ErrBadPhoto, sanitize(typ))
		}
		switch typ {
		case "IHDR":
			h.Width, h.Height = int(binary.BigEndian.Uint32(data[0:4])), int(binary.BigEndian.Uint32(data[4:8]))
			if h.Width <= 0 || h.Height <= 0 || h.Width > 1<<24 || h.Height > 1<<24 {
				return h, fmt.Errorf("%w: the PNG is %d×%d pixels", ErrBadPhoto, h.Width, h.Height)
			}
			per, kind := pngBytesPerPixel(data[8], data[9])
			if per == 0 {
				return h, fmt.Errorf("%w: the PNG's bit depth %d and colour type %d do not go together", ErrBadPhoto, data[8], data[9])
			}
			h.Kind = kind
			grey = data[9] == 0
			h.DecodeBytes = per * int64(h.Width) * int64(h.Height)
			if data[12] == 1 { // interlaced: each pass is decoded, then merged
				h.DecodeBytes *= 2
			}
		case "eXIf":
			h.Orientation = exifOrientation(data[:n])
		case "tRNS":
			// A transparent grey turns the decoder's grey picture into NRGBA (16-bit:
			// NRGBA64): 4 times the bytes. Truecolour is RGBA or NRGBA alike.
			if grey && !transparent {
				h.DecodeBytes *= 4
				h.Kind, transparent = "a PNG with a transparent grey", true
			}
		}
	}
}

// pngBytesPerPixel is what image/png allocates per pixel for a bit depth and colour
// type, and a word for the kind.
func pngBytesPerPixel(depth, colour byte) (int64, string) {
	deep := depth == 16
	switch colour {
	case 0: // grey
		if deep {
			return 2, "a 16-bit PNG"
		}
		if depth == 1 || depth == 2 || depth == 4 || depth == 8 {
			return 1, "a PNG"
		}
	case 3: // palette
		if depth == 1 || depth == 2 || depth == 4 || depth == 8 {
			return 1, "a PNG"
		}
	case 2, 4, 6: // RGB, grey+alpha, RGBA
		if deep {
			return 8, "a 16-bit PNG"
		}
		if depth == 8 {
			return 4, "a PNG"
		}
	}
	return 0, ""
}

func sanitize(s string) string {
	return string(bytes.Map(func(r rune) rune {
		if r < 0x21 || r > 0x7e {
			return '?'
		}
		return r
	}, []byte(s)))
}

func bad(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: it ends before its header does", ErrBadPhoto)
	}
	return fmt.Errorf("%w: %v", ErrBadPhoto, err)
}

// exifOrientation reads tag 0x0112 of IFD0 from a TIFF structure ("II*\0" or
// "MM\0*"); 1 when it is missing or out of range.
func exifOrientation(tiff []byte) int {
	if len(tiff) < 8 {
		return 1
	}
	var bo binary.ByteOrder
	switch string(tiff[:4]) {
	case "II*\x00":
		bo = binary.LittleEndian
	case "MM\x00*":
		bo = binary.BigEndian
	default:
		return 1
	}
	ifd := int64(bo.Uint32(tiff[4:8]))
	if ifd < 8 || ifd+2 > int64(len(tiff)) {
		return 1
	}
	n := int64(bo.Uint16(tiff[ifd:]))
	for i := range n {
		e := ifd + 2 + 12*i
		if e+12 > int64(len(tiff)) {
			return 1
		}
		if bo.Uint16(tiff[e:]) != 0x0112 {
			continue
		}
		// SHORT, count 1: the value sits in the first two bytes of the value field.
		if bo.Uint16(tiff[e+2:]) != 3 || bo.Uint32(tiff[e+4:]) != 1 {
			return 1
		}
		if o := int(bo.Uint16(tiff[e+8:])); o >= 1 && o <= 8 {
			return o
		}
		return 1
	}
	return 1
}

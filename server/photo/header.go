// Package photo checks and prepares the photos gardeners attach to logs: JPEG or
// PNG, read from a file the upload streamed to, checked by their headers before
// anything is decoded (format, dimensions, and what decoding would cost in memory),
// then decoded once, turned upright by their EXIF orientation and encoded again,
// which leaves every byte of metadata behind (GPS position, camera, times, comments),
// along with a JPEG thumbnail.
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

// ReadHeader reads a photo's header from r: its format, dimensions and orientation,
// without decoding any pixel.
func ReadHeader(r io.Reader) (Header, error) {
	br := bufio.NewReaderSize(io.LimitReader(r, maxHeaderScan), 64<<10)
	head, _ := br.Peek(8)
	switch Sniff(head) {
	case JPEG:
		return jpegHeader(br)
	case PNG:
		return pngHeader(br)
	}
	return Header{}, fmt.Errorf("%w: %s", ErrNotPhoto, describe(head))
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

// jpegHeader walks the segments up to the frame header, reading the EXIF
// orientation on the way.
func jpegHeader(br *bufio.Reader) (Header, error) {
	h := Header{ContentType: JPEG, Orientation: 1}
	if _, err := br.Discard(2); err != nil { // SOI
		return h, bad(err)
	}
	for {
		marker, err := nextMarker(br)
		if err != nil {
			return h, bad(err)
		}
		switch {
		case marker == 0xD8 || marker == 0x01 || marker >= 0xD0 && marker <= 0xD7:
			continue // no length
		case marker == 0xD9 || marker == 0xDA:
			return h, fmt.Errorf("%w: the JPEG has no frame header before its data", ErrBadPhoto)
		}
		var lenBuf [2]byte
		if _, err := io.ReadFull(br, lenBuf[:]); err != nil {
			return h, bad(err)
		}
		n := int(binary.BigEndian.Uint16(lenBuf[:])) - 2
		if n < 0 {
			return h, fmt.Errorf("%w: a JPEG segment of negative length", ErrBadPhoto)
		}
		seg := make([]byte, n)
		if _, err := io.ReadFull(br, seg); err != nil {
			return h, bad(err)
		}
		switch marker {
		case 0xE1: // APP1: EXIF (or XMP, which is skipped)
			if rest, ok := bytes.CutPrefix(seg, []byte("Exif\x00\x00")); ok {
				h.Orientation = exifOrientation(rest)
			}
		case 0xC0, 0xC1, 0xC2:
			return frameHeader(h, seg, marker == 0xC2)
		case 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF:
			return h, fmt.Errorf("%w: a lossless, hierarchical or arithmetic-coded JPEG; save it as a standard JPEG", ErrNotPhoto)
		}
	}
}

// nextMarker skips to the next marker (fill bytes included) and returns its code.
func nextMarker(br *bufio.Reader) (byte, error) {
	c, err := br.ReadByte()
	if err != nil {
		return 0, err
	}
	if c != 0xFF {
		return 0, errors.New("a JPEG segment does not start with a marker")
	}
	for c == 0xFF {
		if c, err = br.ReadByte(); err != nil {
			return 0, err
		}
	}
	return c, nil
}

// frameHeader reads SOF0/1/2: precision, height, width, components with their
// sampling factors, which set what the decoder allocates.
func frameHeader(h Header, seg []byte, progressive bool) (Header, error) {
	if len(seg) < 6 {
		return h, fmt.Errorf("%w: a short JPEG frame header", ErrBadPhoto)
	}
	h.Height, h.Width = int(binary.BigEndian.Uint16(seg[1:3])), int(binary.BigEndian.Uint16(seg[3:5]))
	nc := int(seg[5])
	if h.Width == 0 || h.Height == 0 || nc == 0 || len(seg) < 6+3*nc {
		return h, fmt.Errorf("%w: the JPEG's frame header has no size or components", ErrBadPhoto)
	}
	hmax, vmax := 1, 1
	for i := range nc {
		hs, vs := int(seg[7+3*i]>>4), int(seg[7+3*i]&15)
		if hs == 0 || vs == 0 {
			return h, fmt.Errorf("%w: a JPEG component without sampling factors", ErrBadPhoto)
		}
		hmax, vmax = max(hmax, hs), max(vmax, vs)
	}
	// Each component's plane, at its sampling; a progressive decode also keeps every
	// coefficient (64 int32 per 8×8 block: 4 bytes per sample).
	per := int64(1)
	h.Kind = "a JPEG"
	if progressive {
		per, h.Kind = 5, "a progressive JPEG"
	}
	w, ht := int64(h.Width), int64(h.Height)
	for i := range nc {
		hs, vs := int64(seg[7+3*i]>>4), int64(seg[7+3*i]&15)
		h.DecodeBytes += per * ceilDiv(w*hs, int64(hmax)) * ceilDiv(ht*vs, int64(vmax))
	}
	if nc == 4 {
		h.DecodeBytes += 4 * w * ht // CMYK is converted into an image of its own
	}
	// The first plane is allocated at full size whatever odd sampling claims.
	h.DecodeBytes = max(h.DecodeBytes, per*w*ht)
	return h, nil
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// pngHeader reads IHDR and the chunks up to the first IDAT, for an eXIf orientation.
func pngHeader(br *bufio.Reader) (Header, error) {
	h := Header{ContentType: PNG, Orientation: 1, Kind: "a PNG"}
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
			if n != 13 {
				return h, fmt.Errorf("%w: a PNG header chunk of %d bytes", ErrBadPhoto, n)
			}
			h.Width, h.Height = int(binary.BigEndian.Uint32(data[0:4])), int(binary.BigEndian.Uint32(data[4:8]))
			if h.Width <= 0 || h.Height <= 0 || h.Width > 1<<24 || h.Height > 1<<24 {
				return h, fmt.Errorf("%w: the PNG is %d×%d pixels", ErrBadPhoto, h.Width, h.Height)
			}
			per, kind := pngBytesPerPixel(data[8], data[9])
			if per == 0 {
				return h, fmt.Errorf("%w: the PNG's bit depth %d and colour type %d do not go together", ErrBadPhoto, data[8], data[9])
			}
			h.Kind = kind
			h.DecodeBytes = per * int64(h.Width) * int64(h.Height)
			if data[12] == 1 { // interlaced: each pass is decoded, then merged
				h.DecodeBytes *= 2
			}
		case "eXIf":
			h.Orientation = exifOrientation(data[:n])
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

package plantmap

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
)

// jpegDecodeBytes reckons, from a JPEG's frame header alone, what image/jpeg
// allocates to decode it: a byte per sample of each component's plane, padded to
// whole MCUs; a progressive JPEG keeps 64 int32 coefficients per block besides (four
// bytes per sample); a four-component (CMYK) one is converted into a second, 4-byte
// image.
func jpegDecodeBytes(r io.Reader) (int64, error) {
	br := bufio.NewReader(r)
	var b [2]byte
	if _, err := io.ReadFull(br, b[:]); err != nil || b != [2]byte{0xff, 0xd8} {
		return 0, errors.New("no JPEG start of image")
	}
	for {
		c, err := br.ReadByte()
		if err != nil {
			return 0, errors.New("no JPEG frame header")
		}
		if c != 0xff {
			continue // stray bytes between segments: image/jpeg skips them too
		}
		marker, err := br.ReadByte()
		for err == nil && marker == 0xff {
			marker, err = br.ReadByte() // fill bytes
		}
		if err != nil {
			return 0, errors.New("no JPEG frame header")
		}
		if marker == 0x00 || marker == 0x01 || marker >= 0xd0 && marker <= 0xd9 {
			continue // no length follows
		}
		if _, err := io.ReadFull(br, b[:]); err != nil {
			return 0, errors.New("a JPEG segment cut short")
		}
		n := int(binary.BigEndian.Uint16(b[:]))
		if n < 2 {
			return 0, errors.New("a JPEG segment of a bad length")
		}
		seg := make([]byte, n-2) // at most 64 KiB
		if _, err := io.ReadFull(br, seg); err != nil {
			return 0, errors.New("a JPEG segment cut short")
		}
		if marker < 0xc0 || marker > 0xcf || marker == 0xc4 || marker == 0xc8 || marker == 0xcc {
			continue
		}
		return frameBytes(seg, marker&3 == 2)
	}
}

// frameBytes is jpegDecodeBytes of the frame header seg (a start-of-frame segment).
func frameBytes(seg []byte, progressive bool) (int64, error) {
	if len(seg) < 6 || len(seg) < 6+3*int(seg[5]) || seg[5] == 0 {
		return 0, errors.New("a bad JPEG frame header")
	}
	height, width := int64(binary.BigEndian.Uint16(seg[1:3])), int64(binary.BigEndian.Uint16(seg[3:5]))
	comps := int(seg[5])
	hmax, vmax := int64(1), int64(1)
	for i := range comps {
		s := seg[6+3*i+1]
		hmax, vmax = max(hmax, int64(s>>4)), max(vmax, int64(s&15))
	}
	mxx, myy := (width+8*hmax-1)/(8*hmax), (height+8*vmax-1)/(8*vmax)
	var samples int64
	for i := range comps {
		s := seg[6+3*i+1]
		samples += 8 * int64(s>>4) * mxx * 8 * int64(s&15) * myy
	}
	need := samples
	if progressive {
		need += 4 * samples
	}
	if comps == 4 {
		need += 4 * 8 * hmax * mxx * 8 * vmax * myy
	}
	return need, nil
}

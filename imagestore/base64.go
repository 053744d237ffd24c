package imagestore

import (
	"encoding/base64"
	"fmt"
	"slices"
)

// b64Decoder decodes standard base64 that arrives in pieces, with the rules of
// DecodeDataURL: CR and LF are ignored anywhere; padding is either correct or absent;
// any other character, padding before the last quantum, or a last quantum of one
// character is an error at that byte. Runs of whole quanta go through
// encoding/base64; only the characters around line breaks and the end take the slow
// path. The zero value is ready to use.
type b64Decoder struct {
	quad [4]byte // values of the pending characters of the current quantum
	n    int     // pending characters
	pad  bool    // one '=' after two characters: the second must follow
	done bool    // the padded last quantum is complete: only line breaks may follow
	off  int64   // offset of the next input character in the base64 data
	err  error
}

// decodeMap maps a character to its 6-bit value, or 0xff.
var decodeMap = func() (m [256]byte) {
	for i := range m {
		m[i] = 0xff
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for i := range len(alphabet) {
		m[alphabet[i]] = byte(i)
	}
	return m
}()

// decode appends the bytes that src completes to dst. With room for len(src)/4*3+3
// more bytes in dst it does not allocate, so a caller bounds its buffer by the input
// it passes. After an error, decode and finish return it again.
func (d *b64Decoder) decode(dst, src []byte) ([]byte, error) {
	if d.err != nil {
		return dst, d.err
	}
	for len(src) > 0 {
		if d.n == 0 && !d.pad && !d.done {
			// Whole quanta up to the next line break, padding or bad character, in
			// one call. (A loop rather than bytes.IndexAny: it lets DecodeDataURL pass
			// its string without a copy.)
			run := 0
			for run < len(src) && decodeMap[src[run]] != 0xff {
				run++
			}
			run &^= 3
			if run > 0 {
				k := len(dst)
				dst = slices.Grow(dst, run/4*3) // a no-op when the caller sized dst
				m, err := base64.StdEncoding.Decode(dst[k:k+run/4*3], src[:run])
				if err != nil { // cannot happen: every character is in the alphabet
					return dst, d.fail(d.off)
				}
				dst = dst[:k+m]
				src, d.off = src[run:], d.off+int64(run)
				continue
			}
		}
		var err error
		if dst, err = d.step(dst, src[0]); err != nil {
			return dst, err
		}
		src, d.off = src[1:], d.off+1
	}
	return dst, nil
}

// step takes one character at d.off.
func (d *b64Decoder) step(dst []byte, c byte) ([]byte, error) {
	switch v := decodeMap[c]; {
	case c == '\r' || c == '\n':
	case d.done:
		return dst, d.fail(d.off)
	case c == '=':
		switch {
		case d.n == 3:
			dst, d.n, d.done = d.flush(dst), 0, true
		case d.n == 2 && !d.pad:
			d.pad = true
		case d.n == 2:
			dst, d.n, d.pad, d.done = d.flush(dst), 0, false, true
		default:
			return dst, d.fail(d.off)
		}
	case v == 0xff || d.pad:
		return dst, d.fail(d.off)
	default:
		d.quad[d.n] = v
		if d.n++; d.n == 4 {
			dst, d.n = d.flush(dst), 0
		}
	}
	return dst, nil
}

// flush appends the bytes of the d.n (2 to 4) pending characters.
func (d *b64Decoder) flush(dst []byte) []byte {
	q := d.quad
	dst = append(dst, q[0]<<2|q[1]>>4)
	if d.n > 2 {
		dst = append(dst, q[1]<<4|q[2]>>2)
	}
	if d.n > 3 {
		dst = append(dst, q[2]<<6|q[3])
	}
	return dst
}

// finish ends the input: an unpadded last quantum of two or three characters gives
// its bytes; one character, or a lone '=', is an error at the end of the data.
func (d *b64Decoder) finish(dst []byte) ([]byte, error) {
	switch {
	case d.err != nil:
		return dst, d.err
	case d.pad || d.n == 1:
		return dst, d.fail(d.off)
	case d.n > 1:
		dst, d.n = d.flush(dst), 0
	}
	return dst, nil
}

func (d *b64Decoder) fail(at int64) error {
	d.err = fmt.Errorf("%w: bad character, bad padding or truncated data at byte %d of the image data (standard alphabet, padding optional)", ErrBadBase64, at)
	return d.err
}

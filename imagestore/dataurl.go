package imagestore

import (
	"encoding/base64"
	"fmt"
	"io"
	"strings"
)

// DataURLPrefix starts every data URL this package reads and writes.
const DataURLPrefix = "data:image/png;base64,"

// maxEcho caps how much of a client's media type an error message repeats.
const maxEcho = 64

// DecodeDataURL returns the bytes of a "data:image/png;base64,<data>" URL.
//
// The scheme, media type and "base64" are matched case-insensitively (RFC 2397 and
// media types are case-insensitive); media-type parameters are not accepted. The data
// uses the standard base64 alphabet, with correct padding or none at all. CR and LF
// anywhere in the data are ignored, so MIME-style wrapped lines work; any other
// whitespace is an error, since no browser produces it and accepting it would hide
// mangled uploads.
//
// The result is allocated once, at the decoded size, so memory use is bounded by the
// input: the caller bounds the input (the HTTP body limit). DecodeDataURL does not
// look at the bytes; call CheckPNG for that. DataURLWriter decodes the same format,
// with the same errors, without holding it in memory.
func DecodeDataURL(s string) ([]byte, error) {
	if err := checkScheme(s, true); err != nil {
		return nil, err
	}
	meta, payload, ok := strings.Cut(s[len(scheme):], ",")
	if !ok {
		return nil, errNoComma
	}
	if err := checkMeta(meta, false); err != nil {
		return nil, err
	}
	var d b64Decoder
	// One allocation: the conversion of payload does not copy, as decode neither
	// keeps nor changes its input.
	b, err := d.decode(make([]byte, 0, base64.RawStdEncoding.DecodedLen(len(payload))), []byte(payload))
	if err == nil {
		b, err = d.finish(b)
	}
	if err != nil {
		return nil, err
	}
	if len(b) == 0 {
		// No data after the comma, or only line breaks.
		return nil, errNoData
	}
	return b, nil
}

const scheme = "data:"

var (
	errNoComma = fmt.Errorf("%w: no comma after the media type; the image must start with %q", ErrBadDataURL, DataURLPrefix)
	errNoData  = fmt.Errorf("%w: no image data after %q", ErrBadDataURL, DataURLPrefix)
)

// checkScheme checks the start of a data URL; with whole false, s may be the first
// part of a longer URL, and too short a part is not (yet) an error.
func checkScheme(s string, whole bool) error {
	if len(s) < len(scheme) && !whole && strings.HasPrefix(scheme, strings.ToLower(s)) {
		return nil
	}
	if len(s) < len(scheme) || !strings.EqualFold(s[:len(scheme)], scheme) {
		return fmt.Errorf("%w: the image must start with %q", ErrBadDataURL, DataURLPrefix)
	}
	return nil
}

// checkMeta checks what lies between "data:" and the comma. truncated says that meta
// is only the first part of it (DataURLWriter keeps maxMeta bytes): a longer media
// type or encoding cannot be the one required, and echo shortens it anyway.
func checkMeta(meta string, truncated bool) error {
	mediaType, encoding, semicolon := strings.Cut(meta, ";")
	if (truncated && !semicolon) || !strings.EqualFold(mediaType, "image/png") {
		return fmt.Errorf("%w: the data URL declares %q; it must start with %q", ErrNotPNG, echo(mediaType), DataURLPrefix)
	}
	if truncated || !strings.EqualFold(encoding, "base64") {
		return fmt.Errorf("%w: the image data must be base64-encoded; the image must start with %q", ErrBadDataURL, DataURLPrefix)
	}
	return nil
}

// echo shortens client text repeated in an error message.
func echo(s string) string {
	if len(s) > maxEcho {
		return s[:maxEcho] + "…"
	}
	return s
}

// EncodedLen is the number of bytes WriteDataURL writes for an image of size bytes
// (size ≥ 0), e.g. for a Content-Length header.
func EncodedLen(size int64) int64 {
	return int64(len(DataURLPrefix)) + (size+2)/3*4
}

// readChunk is how much WriteDataURL reads at a time. A multiple of 3, so that only
// the last chunk needs padding and chunks encode independently.
const readChunk = 24 * 1024

// WriteDataURL writes DataURLPrefix and the padded standard base64 of everything r
// yields. It streams in chunks of readChunk bytes through one buffer of about 56 KiB,
// so a file is never held in memory, and each Write carries 32 KiB (fewer, larger
// writes than base64.NewEncoder's 1 KiB ones). The output needs no escaping inside a
// JSON string.
//
// A write error is returned as is (typically a client that went away); after any
// error the output is incomplete.
func WriteDataURL(w io.Writer, r io.Reader) error {
	buf := make([]byte, readChunk+len(DataURLPrefix)+base64.StdEncoding.EncodedLen(readChunk))
	src, dst := buf[:readChunk], buf[readChunk:]
	n := copy(dst, DataURLPrefix) // the first write carries the prefix
	for {
		m, rerr := io.ReadFull(r, src)
		if m > 0 {
			base64.StdEncoding.Encode(dst[n:], src[:m])
			n += base64.StdEncoding.EncodedLen(m)
		}
		if n > 0 {
			if _, err := w.Write(dst[:n]); err != nil {
				return err
			}
			n = 0
		}
		switch rerr {
		case nil:
		case io.EOF, io.ErrUnexpectedEOF: // ReadFull's way of saying "done"
			return nil
		default:
			return fmt.Errorf("read image: %w", rerr)
		}
	}
}

// maxMeta is how much of the part between "data:" and the comma a DataURLWriter keeps:
// enough to tell "image/png;base64" from anything else and to echo a media type.
const maxMeta = 2 * maxEcho

// decodeChunk bounds how much data URL text a DataURLWriter decodes at a time.
const decodeChunk = 32 << 10

// DataURLWriter decodes a data URL written to it in pieces of any size and writes the
// bytes to dst as they complete, so that neither the text nor the bytes are ever held
// whole: it keeps at most maxMeta bytes of the header and one buffer of 24 KiB. It
// accepts exactly what DecodeDataURL accepts and fails with the same errors; an error
// about the header comes as soon as the bytes that cause it, a base64 error at the
// bad byte, and one about the end (no data, bad padding) from Close.
//
// After an error every call returns it again. An error of dst is returned as is.
type DataURLWriter struct {
	dst     io.Writer
	meta    []byte // the part between "data:" and the comma, up to maxMeta bytes
	head    int64  // bytes of the URL before the comma seen so far
	inData  bool   // the comma has been seen
	b64     b64Decoder
	buf     []byte
	decoded int64
	err     error
}

// NewDataURLWriter returns a DataURLWriter that writes the decoded bytes to dst.
func NewDataURLWriter(dst io.Writer) *DataURLWriter {
	return &DataURLWriter{dst: dst}
}

// Write decodes p, the next part of the data URL.
func (d *DataURLWriter) Write(p []byte) (int, error) {
	if d.err != nil {
		return 0, d.err
	}
	n := len(p)
	if !d.inData {
		p = d.header(p)
		if d.err != nil {
			return 0, d.err
		}
	}
	for len(p) > 0 {
		chunk := p[:min(len(p), decodeChunk)]
		p = p[len(chunk):]
		if d.buf == nil {
			d.buf = make([]byte, 0, decodeChunk/4*3+3)
		}
		out, err := d.b64.decode(d.buf[:0], chunk)
		if werr := d.emit(out); werr != nil {
			return 0, werr
		}
		if err != nil {
			d.err = err
			return 0, err
		}
	}
	return n, nil
}

// header consumes the URL up to and including the comma and returns the rest of p.
func (d *DataURLWriter) header(p []byte) []byte {
	comma := -1
	for i, c := range p {
		if c == ',' {
			comma = i
			break
		}
	}
	part := p
	if comma >= 0 {
		part = p[:comma]
	}
	// The scheme comes first: check it as soon as its bytes are here.
	if d.head < int64(len(scheme)) {
		k := min(len(part), len(scheme)-int(d.head))
		d.meta = append(d.meta, part[:k]...) // "data:" is kept until checked
		whole := comma >= 0
		if err := checkScheme(string(d.meta), whole); err != nil {
			d.err = err
			return nil
		}
		if len(d.meta) == len(scheme) {
			d.meta = d.meta[:0]
		}
		d.head += int64(k)
		part = part[k:]
	}
	if keep := maxMeta - len(d.meta); keep > 0 {
		d.meta = append(d.meta, part[:min(len(part), keep)]...)
	}
	d.head += int64(len(part))
	if comma < 0 {
		return nil
	}
	if err := checkMeta(string(d.meta), d.head-int64(len(scheme)) > maxMeta); err != nil {
		d.err = err
		return nil
	}
	d.inData = true
	return p[comma+1:]
}

func (d *DataURLWriter) emit(out []byte) error {
	if len(out) == 0 {
		return nil
	}
	d.decoded += int64(len(out))
	if _, err := d.dst.Write(out); err != nil {
		d.err = err
		return err
	}
	return nil
}

// Close ends the data URL: it checks the padding and that there was data, and writes
// the last bytes. It does not close dst.
func (d *DataURLWriter) Close() error {
	if d.err != nil {
		return d.err
	}
	if !d.inData {
		if d.head < int64(len(scheme)) {
			d.err = checkScheme(string(d.meta), true)
		} else {
			d.err = errNoComma
		}
		return d.err
	}
	if d.buf == nil {
		d.buf = make([]byte, 0, 3)
	}
	out, err := d.b64.finish(d.buf[:0])
	if werr := d.emit(out); werr != nil {
		return werr
	}
	if err != nil {
		d.err = err
		return err
	}
	if d.decoded == 0 {
		d.err = errNoData
		return d.err
	}
	return nil
}

// Decoded is the number of bytes written to dst so far.
func (d *DataURLWriter) Decoded() int64 { return d.decoded }

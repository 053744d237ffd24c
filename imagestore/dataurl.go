package imagestore

import (
	"encoding/base64"
	"errors"
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
// look at the bytes; call CheckPNG for that.
func DecodeDataURL(s string) ([]byte, error) {
	const scheme = "data:"
	if len(s) < len(scheme) || !strings.EqualFold(s[:len(scheme)], scheme) {
		return nil, fmt.Errorf("%w: the image must start with %q", ErrBadDataURL, DataURLPrefix)
	}
	meta, payload, ok := strings.Cut(s[len(scheme):], ",")
	if !ok {
		return nil, fmt.Errorf("%w: no comma after the media type; the image must start with %q", ErrBadDataURL, DataURLPrefix)
	}
	mediaType, encoding, _ := strings.Cut(meta, ";")
	if !strings.EqualFold(mediaType, "image/png") {
		return nil, fmt.Errorf("%w: the data URL declares %q; it must start with %q", ErrNotPNG, echo(mediaType), DataURLPrefix)
	}
	if !strings.EqualFold(encoding, "base64") {
		return nil, fmt.Errorf("%w: the image data must be base64-encoded; the image must start with %q", ErrBadDataURL, DataURLPrefix)
	}
	if payload == "" {
		return nil, fmt.Errorf("%w: no image data after %q", ErrBadDataURL, DataURLPrefix)
	}

	// Padding decides the decoder: with '=' it must be correct (StdEncoding checks
	// it), without any the raw decoder accepts every complete length.
	enc := base64.RawStdEncoding
	if strings.IndexByte(payload, '=') >= 0 {
		enc = base64.StdEncoding
	}
	// DecodeString makes exactly one allocation of DecodedLen bytes: the compiler
	// does not copy the string for the non-escaping conversion inside it.
	b, err := enc.DecodeString(payload)
	if err != nil {
		var corrupt base64.CorruptInputError
		if errors.As(err, &corrupt) {
			return nil, fmt.Errorf("%w: bad character, bad padding or truncated data at byte %d of the image data (standard alphabet, padding optional)", ErrBadBase64, int64(corrupt))
		}
		return nil, fmt.Errorf("%w: %v", ErrBadBase64, err)
	}
	if len(b) == 0 {
		// Only line breaks after the comma.
		return nil, fmt.Errorf("%w: no image data after %q", ErrBadDataURL, DataURLPrefix)
	}
	return b, nil
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

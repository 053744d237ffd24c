package imagestore

import (
	"bytes"
	"errors"
	"fmt"
	"image/png"
	"io"
	"strings"
)

// pngSignature starts every PNG file (PNG spec, section 5.2).
const pngSignature = "\x89PNG\r\n\x1a\n"

// CheckPNG reports the dimensions of the PNG in b after checking its signature and
// parsing its header chunks with image/png.DecodeConfig. It does not decode pixels, so
// it is cheap for any size; a file whose pixel data is damaged passes.
//
// Bytes without the PNG signature give ErrNotPNG (naming JPEG, GIF or WebP when the
// bytes are one of those); a bad header or a zero dimension gives ErrInvalidPNG.
func CheckPNG(b []byte) (width, height int, err error) {
	return checkPNG(bytes.NewReader(b))
}

// sniffLen is how many bytes sniff needs to name a format.
const sniffLen = 12

// checkPNG is CheckPNG over a reader, which it reads only as far as the header goes.
// An error of r itself is returned as is, not as a client's mistake.
func checkPNG(r io.Reader) (width, height int, err error) {
	rr := &readErr{r: r}
	var head [sniffLen]byte
	n, _ := io.ReadFull(rr, head[:])
	if rr.err != nil {
		return 0, 0, rr.err
	}
	if !bytes.HasPrefix(head[:n], []byte(pngSignature)) {
		return 0, 0, fmt.Errorf("%w: %s", ErrNotPNG, sniff(head[:n]))
	}
	cfg, err := png.DecodeConfig(io.MultiReader(bytes.NewReader(head[:n]), rr))
	if rr.err != nil {
		return 0, 0, rr.err
	}
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %s", ErrInvalidPNG, pngProblem(err))
	}
	// DecodeConfig rejects non-positive sizes today; the API promises it regardless.
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return 0, 0, fmt.Errorf("%w: width and height must be positive, got %d×%d", ErrInvalidPNG, cfg.Width, cfg.Height)
	}
	return cfg.Width, cfg.Height, nil
}

// readErr keeps the first error of r other than the end of the data.
type readErr struct {
	r   io.Reader
	err error
}

func (e *readErr) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF && e.err == nil {
		e.err = fmt.Errorf("read image: %w", err)
	}
	return n, err
}

// sniff names what b is instead of a PNG, for an error message.
func sniff(b []byte) string {
	switch {
	case len(b) == 0:
		return "the image data is empty"
	case bytes.HasPrefix(b, []byte("\xff\xd8\xff")):
		return "the data is a JPEG image"
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return "the data is a GIF image"
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return "the data is a WebP image"
	default:
		return "the data does not start with the PNG signature"
	}
}

// pngProblem turns an image/png error into text for a client, without the "png: "
// package prefix.
func pngProblem(err error) string {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return "the header is truncated"
	}
	return strings.TrimPrefix(err.Error(), "png: ")
}

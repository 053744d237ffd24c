package imagestore

import "errors"

// Errors a client can cause with an upload. They are always wrapped with a message
// that says what to fix; test with errors.Is.
var (
	// ErrBadDataURL: the image is not a base64 data URL, or has no data.
	ErrBadDataURL = errors.New("invalid data URL")
	// ErrNotPNG: the data URL declares another media type, or the bytes are not PNG.
	ErrNotPNG = errors.New("only PNG is supported")
	// ErrBadBase64: the data after the comma is not standard-alphabet base64.
	ErrBadBase64 = errors.New("invalid base64")
	// ErrInvalidPNG: the bytes start like a PNG but its header does not parse or has
	// a zero dimension.
	ErrInvalidPNG = errors.New("not a valid PNG")
)

// Errors of a Store.
var (
	// ErrNotFound: no file for a well-formed image path.
	ErrNotFound = errors.New("image not found")
	// ErrBadPath: the path is not one this store could have generated (which also
	// rules out anything that escapes the directory).
	ErrBadPath = errors.New("invalid image path")
)

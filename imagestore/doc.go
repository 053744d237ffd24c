// Package imagestore parses uploaded garden images and keeps them as files.
//
// An upload arrives as a data URL ("data:image/png;base64,…"): DecodeDataURL turns it
// into bytes and CheckPNG makes sure those bytes are a PNG with a usable header.
// A Store writes the bytes crash-safely under a random name in one directory and hands
// back a path relative to the data directory (the parent of that directory), which is
// what a garden record keeps as image_path. An Upload does all of that while the text
// arrives (DataURLWriter decodes it piece by piece into a Pending file), so an upload
// of any size costs a few buffers of memory; WriteDataURL streams a stored file back
// as a data URL the same way.
//
// Every error a client can cause wraps one of the exported sentinels (ErrBadDataURL,
// ErrNotPNG, ErrBadBase64, ErrInvalidPNG), and its message says what to fix without
// naming server paths, so an HTTP layer can answer 400 with err.Error() as the detail.
//
// The package imports only the standard library.
package imagestore

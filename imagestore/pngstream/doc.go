// Package pngstream decodes a PNG row by row, top to bottom, into 8-bit
// non-premultiplied RGBA, holding a few rows rather than the picture: a 12,000 ×
// 9,000 picture decodes in well under a megabyte, where image/png allocates its whole
// pixel array (up to 8 bytes a pixel).
//
// It accepts exactly what image/png.Decode accepts and yields the same pixels (the
// fuzz test holds it to that): every bit depth and colour type (grey, grey+alpha,
// truecolour, truecolour+alpha, palette), tRNS transparency, and Adam7 interlacing.
// Sixteen-bit samples become their high byte.
//
// An interlaced picture cannot be streamed from one pass over its data: row 0 needs
// passes 1, 2, 4 and 6, row 1 needs pass 7, which comes last. So the Decoder reads
// the data once per pass (the source is an io.ReaderAt), each reader inflating and
// discarding what precedes its pass: about twice the inflating, no picture in memory.
//
// Errors a client's picture can cause wrap ErrFormat; others are the reader's.
//
// The package imports only the standard library.
package pngstream

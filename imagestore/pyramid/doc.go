// Package pyramid turns a garden picture (a PNG) into what a slow link can carry: a
// thumbnail, a preview and a pyramid of 256 × 256 tiles, all in one pack file.
//
// Level 0 is the whole picture in one tile; each level doubles the previous one's
// size, up to the picture's own resolution at the last level. A level's pixel is the
// mean of the 2 × 2 pixels below it, weighted by their alpha (so transparent pixels
// lend no colour), rounded to the nearest integer.
//
// Build reads the picture row by row (imagestore/pngstream) and never holds it whole:
// each level keeps one band of 256 rows (or writes it to a scratch file when the
// picture is very wide) and one row waiting for its pair; a band's tiles are encoded as
// soon as it is full. Memory is about 2 KiB per pixel of width, whatever the height.
//
// Tiles, thumbnail and preview are JPEG where they have no transparent pixel (a
// quarter to a tenth of a PNG's bytes on a photo: what a slow link needs), PNG where
// they have one.
//
// The package imports the standard library and imagestore/pngstream only.
package pyramid

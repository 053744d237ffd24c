package plantmap

import (
	"bufio"
	"errors"
	"fmt"
	"image"
	_ "image/gif" // decoders the old server's uploads may need
	_ "image/jpeg"
	"io"
	"io/fs"
	"os"

	"github.com/gardend/gardend/imagestore"
)

// Limits on a garden image from the old server.
const (
	MaxImageFileBytes = 256 << 20
	MaxImagePixels    = 100_000_000
	// MaxDecodeBytes bounds the memory that decoding a JPEG or GIF for its conversion
	// may take, reckoned from its header before any pixel is read (its planes, and a
	// progressive JPEG's coefficients). A PNG is not decoded: it is checked as it
	// streams (imagestore.VerifyPNG), in a few buffers whatever its size.
	MaxDecodeBytes = 256 << 20
)

// Image is a garden image ready for gardend, which keeps PNG only.
type Image struct {
	// File holds the image as gardend keeps it (the original PNG, or its
	// conversion), in the import's spool directory; "" when only checked (a dry run).
	File          string
	Width, Height int
	// Format is what the file really was ("png", "jpeg", "gif"), whatever its name
	// said; Converted is true when it was not PNG and was re-encoded, pixel for pixel.
	Format    string
	Converted bool
}

// Media is the old server's image directory. Only regular files directly inside it
// are read: a symlink (wherever it points), a FIFO, a device or a directory in an
// image's place is refused, and so is a file swapped for another between the check
// and the open.
type Media struct {
	dir  string
	root *os.Root
}

// OpenMedia opens the directory; dir "" gives a Media that refuses every image with
// what to pass.
func OpenMedia(dir string) (*Media, error) {
	if dir == "" {
		return &Media{}, nil
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("--media %s: %w", dir, err)
	}
	return &Media{dir: dir, root: root}, nil
}

// Close closes the directory.
func (m *Media) Close() error {
	if m.root == nil {
		return nil
	}
	return m.root.Close()
}

// open opens the image file name, a regular file directly inside the directory.
func (m *Media) open(name string) (*os.File, fs.FileInfo, error) {
	if m.root == nil {
		return nil, nil, errors.New("pass --media DIR with the old server's image directory (the files its image_path names), or set image_path to \"\" in the dump to import the garden without its image")
	}
	before, err := m.root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("its image file %s is not in %s", name, m.dir)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("its image file: %w", err)
	}
	if !before.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("its image file %s in %s is not a regular file (%s): only regular files inside --media are read", name, m.dir, kindOf(before.Mode()))
	}
	f, err := m.root.OpenFile(name, mediaOpenFlags, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("its image file: %w", err)
	}
	st, err := f.Stat()
	if err == nil && (!st.Mode().IsRegular() || !os.SameFile(before, st)) {
		err = fmt.Errorf("its image file %s in %s changed while it was opened", name, m.dir)
	}
	if err != nil {
		_ = f.Close() // read only: nothing to lose
		return nil, nil, err
	}
	return f, st, nil
}

// kindOf names what a non-regular file is.
func kindOf(mode fs.FileMode) string {
	switch {
	case mode&fs.ModeSymlink != 0:
		return "a symbolic link"
	case mode.IsDir():
		return "a directory"
	case mode&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case mode&(fs.ModeDevice|fs.ModeCharDevice) != 0:
		return "a device"
	case mode&fs.ModeSocket != 0:
		return "a socket"
	}
	return "not a plain file"
}

// LoadImage reads name from the media directory and writes it to out as PNG (out nil:
// only checked, for a dry run): a PNG as it is, checked as it streams; a JPEG or GIF
// (PlantMap's sample "PNG" is really a JPEG) decoded, within MaxDecodeBytes, and
// encoded as PNG at the same size, row by row.
func (m *Media) LoadImage(name string, out io.Writer) (Image, error) {
	f, st, err := m.open(name)
	if err != nil {
		return Image{}, err
	}
	defer func() { _ = f.Close() }() // read only: nothing to lose
	if st.Size() > MaxImageFileBytes {
		return Image{}, fmt.Errorf("its image file %s is larger than %d MiB", name, MaxImageFileBytes>>20)
	}
	// Each pass reads the open file from its start.
	section := func() io.Reader { return io.NewSectionReader(f, 0, st.Size()) }
	cfg, format, err := image.DecodeConfig(bufio.NewReader(section()))
	if err != nil {
		return Image{}, fmt.Errorf("its image file %s is not a PNG, JPEG or GIF image gardend can read (%v)", name, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > MaxImagePixels {
		return Image{}, fmt.Errorf("its image %s is %d×%d pixels; gardend takes up to %d million", name, cfg.Width, cfg.Height, MaxImagePixels/1_000_000)
	}
	img := Image{Width: cfg.Width, Height: cfg.Height, Format: format}
	if format == "png" {
		return img, copyVerifiedPNG(name, section(), out)
	}
	need, err := decodeBytes(format, cfg, section())
	if err != nil {
		return Image{}, fmt.Errorf("its image file %s is damaged: %v", name, err)
	}
	if need > MaxDecodeBytes {
		return Image{}, fmt.Errorf("its image %s (%s, %d×%d pixels) would take %d MiB of memory to convert, more than the %d MiB allowed: convert it to PNG first (a PNG is checked without decoding it)",
			name, format, cfg.Width, cfg.Height, need>>20, MaxDecodeBytes>>20)
	}
	// Every image is decoded whole, so a damaged one is found now, not by a viewer.
	decoded, _, err := image.Decode(bufio.NewReader(section()))
	if err != nil {
		return Image{}, fmt.Errorf("its image file %s is damaged: %v", name, err)
	}
	img.Converted = true
	if out == nil {
		return img, nil
	}
	if err := encodePNG(out, decoded); err != nil {
		return Image{}, fmt.Errorf("convert its image %s to PNG: %w", name, err)
	}
	return img, nil
}

// copyVerifiedPNG checks the PNG r as it streams and copies it whole to out (nil:
// only checks it).
func copyVerifiedPNG(name string, r io.Reader, out io.Writer) error {
	if out != nil {
		r = io.TeeReader(r, out)
	}
	if _, _, err := imagestore.VerifyPNG(r, MaxImagePixels); err != nil {
		return fmt.Errorf("its image file %s: %w", name, err)
	}
	if out != nil {
		// Whatever follows the image's end goes along, so the copy is the file.
		if _, err := io.Copy(io.Discard, r); err != nil {
			return fmt.Errorf("copy its image file %s: %w", name, err)
		}
	}
	return nil
}

// decodeBytes reckons what image/gif or image/jpeg allocates to decode the image r
// whose header is cfg.
func decodeBytes(format string, cfg image.Config, r io.Reader) (int64, error) {
	if format == "jpeg" {
		return jpegDecodeBytes(r)
	}
	return int64(cfg.Width) * int64(cfg.Height), nil // one byte per pixel (Paletted)
}

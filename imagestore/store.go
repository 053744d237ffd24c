package imagestore

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
)

const (
	// tempPrefix marks files Put has not finished; Sweep deletes them. The leading
	// dot keeps them apart from image names, which are lowercase hex.
	tempPrefix = ".tmp-"
	// nameBytes random bytes name an image: 128 bits make a collision (which
	// rename would turn into an overwrite) practically impossible.
	nameBytes = 16
	imageExt  = ".png"
)

// Store keeps image files in one directory. It assumes that a single process owns
// the directory (one gardend per data directory). Its methods are safe for concurrent
// use, except Sweep, which is meant for start-up (see Sweep).
//
// Image paths ("rel") are relative to the parent of the directory, i.e. to the data
// directory when the directory is "<data>/images": "images/<32 hex digits>.png". They
// always use "/" as separator. Only paths of exactly that form are accepted back, so
// no path can leave the directory.
type Store struct {
	dir    string // absolute
	prefix string // base name of dir: first element of every image path
	// exts are the extensions of the store's names; Create uses the first.
	exts  []string
	fault atomic.Pointer[func(step string) error]
}

// Open opens the image directory dir, creating it (mode 0700) and missing parents
// when needed. An existing directory keeps its mode.
func Open(dir string) (*Store, error) { return OpenFor(dir, imageExt) }

// OpenFor is Open for a directory of files of the given extensions (".jpg", ".png",
// …; log photos, say): their names are random hex with one of them, and CreateAs
// picks it. Open is OpenFor(dir, ".png").
func OpenFor(dir string, exts ...string) (*Store, error) {
	if len(exts) == 0 {
		return nil, errors.New("image directory: no file extension given")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("image directory: %w", err)
	}
	prefix := filepath.Base(abs)
	if prefix == string(filepath.Separator) || prefix == "." || prefix == ".." {
		return nil, fmt.Errorf("image directory %q: needs a parent (the data directory)", dir)
	}
	_, statErr := os.Stat(abs)
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("image directory: %w", err)
	}
	if errors.Is(statErr, os.ErrNotExist) {
		// Make the new directory's entry durable before images are promised in it.
		if err := syncDir(filepath.Dir(abs)); err != nil {
			return nil, fmt.Errorf("image directory: %w", err)
		}
	}
	return &Store{dir: abs, prefix: prefix, exts: exts}, nil
}

// Put stores data under a new random name and returns its image path: Create, Write
// and Commit in one call.
func (s *Store) Put(data []byte) (rel string, err error) {
	p, err := s.Create()
	if err != nil {
		return "", err
	}
	if _, err := p.Write(data); err != nil {
		p.Abort()
		return "", err
	}
	return p.Commit()
}

// PutFrom stores everything r yields under a new random name and returns its image
// path, as Put does, streaming.
func (s *Store) PutFrom(r io.Reader) (rel string, err error) {
	p, err := s.Create()
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(p, r); err != nil {
		p.Abort()
		return "", err
	}
	return p.Commit()
}

// Pending is an image file being written, under a temporary name that Sweep deletes
// should the process die. Write fills it; Commit gives it its final name; Abort
// deletes it. A Pending is used by one goroutine.
type Pending struct {
	s    *Store
	f    *os.File
	ext  string
	size int64
	done bool // committed or aborted
}

// Create starts a new image file (of the store's first extension).
func (s *Store) Create() (*Pending, error) { return s.CreateAs(s.exts[0]) }

// CreateAs starts a new file that Commit names with ext, one of the store's
// extensions (a file only read back and aborted may have any).
func (s *Store) CreateAs(ext string) (*Pending, error) {
	f, err := os.CreateTemp(s.dir, tempPrefix+"*")
	if err != nil {
		return nil, fmt.Errorf("store image: %w", err)
	}
	return &Pending{s: s, f: f, ext: ext}, nil
}

// Reader reads what has been written so far, from the start, without disturbing
// further writes.
func (p *Pending) Reader() io.Reader { return p.reader() }

// Write appends b to the file.
func (p *Pending) Write(b []byte) (int, error) {
	n, err := p.f.Write(b)
	p.size += int64(n)
	if err != nil {
		return n, fmt.Errorf("store image: %w", err)
	}
	return n, nil
}

// Size is the number of bytes written so far.
func (p *Pending) Size() int64 { return p.size }

// reader reads what has been written, from the start.
func (p *Pending) reader() io.Reader { return io.NewSectionReader(p.f, 0, p.size) }

// Commit makes the file an image and returns its image path. The file is synced,
// renamed and the directory synced, so after a crash the name either holds all of the
// data or does not exist. On error nothing new is left behind (a crash can leave a
// temporary file for Sweep).
func (p *Pending) Commit() (rel string, err error) {
	if p.done {
		return "", errors.New("store image: the file was already committed or aborted")
	}
	p.done = true
	tmp := p.f.Name()
	final := ""
	defer func() {
		if err != nil {
			// Undo what was done; the error that got here is the one to report,
			// and a leftover file is Sweep's.
			_ = p.f.Close() // harmless when already closed
			_ = os.Remove(tmp)
			if final != "" {
				_ = os.Remove(final)
			}
		}
	}()
	if err := p.f.Sync(); err != nil {
		return "", fmt.Errorf("store image: %w", err)
	}
	if err := p.f.Close(); err != nil {
		return "", fmt.Errorf("store image: %w", err)
	}
	if err := p.s.injectFault(StepWritten); err != nil {
		return "", err
	}
	if !slices.Contains(p.s.exts, p.ext) {
		return "", fmt.Errorf("store image: extension %q is not one of %v", p.ext, p.s.exts)
	}
	name := newName(p.ext)
	if err := os.Rename(tmp, filepath.Join(p.s.dir, name)); err != nil {
		return "", fmt.Errorf("store image: %w", err)
	}
	final = filepath.Join(p.s.dir, name)
	if err := p.s.injectFault(StepRenamed); err != nil {
		return "", err
	}
	if err := syncDir(p.s.dir); err != nil {
		return "", fmt.Errorf("store image: %w", err)
	}
	return p.s.prefix + "/" + name, nil
}

// Abort deletes the file; after Commit it does nothing.
func (p *Pending) Abort() {
	if p.done {
		return
	}
	p.done = true
	_ = p.f.Close()           // the data is being thrown away
	_ = os.Remove(p.f.Name()) // a leftover temporary file is Sweep's
}

// Open opens the image at rel for reading and reports its size. A well-formed path
// without a file gives ErrNotFound; any other path gives ErrBadPath.
func (s *Store) Open(rel string) (io.ReadCloser, int64, error) {
	path, err := s.path(rel)
	if err != nil {
		return nil, 0, err
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, fmt.Errorf("%w: %s", ErrNotFound, rel)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("open image: %w", err)
	}
	info, err := f.Stat()
	if err != nil {
		_ = f.Close() // read only
		return nil, 0, fmt.Errorf("open image: %w", err)
	}
	if !info.Mode().IsRegular() {
		_ = f.Close() // read only
		return nil, 0, fmt.Errorf("open image %s: not a regular file", rel)
	}
	return f, info.Size(), nil
}

// Remove deletes the image at rel. A missing file is not an error: removal follows a
// committed record change and may be repeated. The directory is not synced; if a crash
// brings the file back, Sweep finds it unreferenced.
func (s *Store) Remove(rel string) error {
	path, err := s.path(rel)
	if err != nil {
		return err
	}
	if err := s.injectFault(StepRemove); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove image: %w", err)
	}
	return nil
}

// path maps an image path to its file, accepting only names Put generates.
func (s *Store) path(rel string) (string, error) {
	name, ok := strings.CutPrefix(rel, s.prefix+"/")
	if !ok || !s.isName(name) {
		return "", fmt.Errorf("%w: %q", ErrBadPath, echo(rel))
	}
	return filepath.Join(s.dir, name), nil
}

// newName returns a random image file name.
func newName(ext string) string {
	var b [nameBytes]byte
	rand.Read(b[:]) // never fails: crypto/rand crashes the program instead
	return hex.EncodeToString(b[:]) + ext
}

// isName reports whether name has the form newName produces with one of the
// store's extensions.
func (s *Store) isName(name string) bool {
	for _, ext := range s.exts {
		if isImageName(name, ext) {
			return true
		}
	}
	return false
}

// isImageName reports whether name has the form newName(ext) produces.
func isImageName(name, ext string) bool {
	hexPart, ok := strings.CutSuffix(name, ext)
	if !ok || len(hexPart) != 2*nameBytes {
		return false
	}
	for i := range len(hexPart) {
		c := hexPart[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// syncDir makes a rename in dir durable. With Pending.Commit it is imagestore's one
// private copy of server/atomicfile, which a leaf may not import.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		_ = d.Close() // the Sync error is the one to report
		return err
	}
	return d.Close()
}

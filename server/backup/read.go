package backup

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gardend/gardend/server/atomicfile"
)

// ReadOptions bound what a reader accepts.
type ReadOptions struct {
	// MaxTotal caps the sum of entry sizes; DefaultMaxTotal when zero.
	MaxTotal int64
}

// Verify reads a whole archive and checks its structure, sizes and checksums without
// writing anything. It does not check the database's own consistency (Restore does).
func Verify(r io.Reader, opts ReadOptions) (*Manifest, error) {
	return read(r, opts, func(Entry, time.Time) (io.Writer, func(bool) error, error) {
		return io.Discard, func(bool) error { return nil }, nil
	})
}

// ReadManifest reads only the first entry of an archive.
func ReadManifest(r io.Reader) (*Manifest, error) {
	return readManifest(tar.NewReader(r), DefaultMaxTotal)
}

// sinkFunc opens where an entry's bytes go. read calls done(true) once they all
// arrived and matched, done(false) when the entry failed.
type sinkFunc func(e Entry, mtime time.Time) (w io.Writer, done func(ok bool) error, err error)

// read streams an archive through sink. Entries must follow the manifest's order
// exactly, so a reader never holds more than the manifest in memory, and every byte
// it passes to sink is covered by a size the manifest declared within MaxTotal.
func read(r io.Reader, opts ReadOptions, sink sinkFunc) (*Manifest, error) {
	maxTotal := opts.MaxTotal
	if maxTotal <= 0 {
		maxTotal = DefaultMaxTotal
	}
	tr := tar.NewReader(r)
	m, err := readManifest(tr, maxTotal)
	if err != nil {
		return nil, err
	}
	for i, e := range m.Entries {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: the archive ends after %d of %d entries (truncated?)", ErrFormat, i, len(m.Entries))
		}
		if err != nil {
			return nil, fmt.Errorf("%w: entry %d: %v", ErrFormat, i+1, err)
		}
		if err := checkHeader(hdr); err != nil {
			return nil, err
		}
		if hdr.Name != DataPrefix+e.Path {
			return nil, fmt.Errorf("%w: entry %q where the manifest has %q next", ErrFormat, hdr.Name, DataPrefix+e.Path)
		}
		if hdr.Size != e.Size {
			return nil, fmt.Errorf("%w: %s is %d bytes, the manifest says %d", ErrFormat, e.Path, hdr.Size, e.Size)
		}
		w, done, err := sink(e, hdr.ModTime)
		if err != nil {
			return nil, err
		}
		if err := copyVerified(w, tr, e); err != nil {
			_ = done(false) // discards the entry; the copy's error is the one to report
			return nil, err
		}
		if err := done(true); err != nil {
			return nil, err
		}
	}
	// Whatever follows the last entry is never read: every listed byte is verified.
	return m, nil
}

// copyVerified copies one entry's declared size and compares its checksum.
func copyVerified(w io.Writer, r io.Reader, e Entry) error {
	h := sha256.New()
	if _, err := io.CopyN(io.MultiWriter(w, h), r, e.Size); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%w: %s is cut short (truncated archive)", ErrFormat, e.Path)
		}
		return fmt.Errorf("%s: %w", e.Path, err)
	}
	if hex.EncodeToString(h.Sum(nil)) != e.SHA256 {
		return fmt.Errorf("%w: %s", ErrChecksum, e.Path)
	}
	return nil
}

func readManifest(tr *tar.Reader, maxTotal int64) (*Manifest, error) {
	hdr, err := tr.Next()
	if err != nil {
		return nil, fmt.Errorf("%w: no manifest: %v", ErrFormat, err)
	}
	if hdr.Name != ManifestName {
		return nil, fmt.Errorf("%w: the first entry is %q, not %s", ErrFormat, hdr.Name, ManifestName)
	}
	if err := checkHeader(hdr); err != nil {
		return nil, err
	}
	if hdr.Size > MaxManifestBytes {
		return nil, fmt.Errorf("%w: manifest of %d bytes, at most %d", ErrTooLarge, hdr.Size, MaxManifestBytes)
	}
	// ReadAll grows with the bytes that actually arrive, not with the claimed size.
	body, err := io.ReadAll(io.LimitReader(tr, hdr.Size))
	if err != nil || int64(len(body)) != hdr.Size {
		return nil, fmt.Errorf("%w: manifest cut short", ErrFormat)
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: manifest: %v", ErrFormat, err)
	}
	if err := m.validate(maxTotal); err != nil {
		return nil, err
	}
	return &m, nil
}

// checkHeader admits only plain regular files: no links, devices, directories or
// sparse files (whose small body could expand to a huge declared size).
func checkHeader(hdr *tar.Header) error {
	if hdr.Typeflag != tar.TypeReg {
		return fmt.Errorf("%w: %q is not a regular file (type %q)", ErrUnsafePath, hdr.Name, hdr.Typeflag)
	}
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return fmt.Errorf("%w: %q is a sparse file", ErrUnsafePath, hdr.Name)
		}
	}
	if hdr.Size < 0 {
		return fmt.Errorf("%w: %q has a negative size", ErrFormat, hdr.Name)
	}
	return nil
}

// extract unpacks an archive into dir, which must exist and be empty, verifying as it
// goes; every file and directory is synced before it returns.
func extract(r io.Reader, dir string, opts ReadOptions) (*Manifest, error) {
	dirs := map[string]bool{dir: true}
	m, err := read(r, opts, func(e Entry, mtime time.Time) (io.Writer, func(bool) error, error) {
		path := filepath.Join(dir, filepath.FromSlash(e.Path))
		parent := filepath.Dir(path)
		if !dirs[parent] {
			if err := os.MkdirAll(parent, 0o700); err != nil {
				return nil, nil, fmt.Errorf("restore %s: %w", e.Path, err)
			}
			for p := parent; p != dir && !dirs[p]; p = filepath.Dir(p) {
				dirs[p] = true
			}
		}
		// O_EXCL: two names that one file system folds together fail loudly.
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("restore %s: %w", e.Path, err)
		}
		return f, func(ok bool) error {
			if !ok {
				return f.Close()
			}
			if err := f.Sync(); err != nil {
				_ = f.Close() // the sync error is the one to report
				return fmt.Errorf("restore %s: %w", e.Path, err)
			}
			if err := f.Close(); err != nil {
				return fmt.Errorf("restore %s: %w", e.Path, err)
			}
			if !mtime.IsZero() {
				_ = os.Chtimes(path, mtime, mtime) // cosmetic: a failure loses nothing
			}
			return nil
		}, nil
	})
	if err != nil {
		return nil, err
	}
	for d := range dirs {
		if err := atomicfile.SyncDir(d); err != nil {
			return nil, fmt.Errorf("restore: sync %s: %w", d, err)
		}
	}
	return m, nil
}

// Extract unpacks and verifies an archive into dir, an empty directory, as Restore
// does before it switches a data directory over: for a restore whose target is no
// directory (a database server), which then loads what dir holds.
func Extract(r io.Reader, dir string, opts ReadOptions) (*Manifest, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	if len(entries) > 0 {
		return nil, fmt.Errorf("restore: %s is not empty", dir)
	}
	return extract(r, dir, opts)
}

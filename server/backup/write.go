package backup

import (
	"archive/tar"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	// tempPrefix marks files being written (imagestore's convention, and ours for the
	// spool): never archived, at any depth.
	tempPrefix = ".tmp-"
	// spoolPrefix names Write's private directory inside the data directory.
	spoolPrefix = tempPrefix + "backup-"
	// restorePrefix names Restore's directories inside the data directory.
	restorePrefix = ".restore-"
)

// Source says what Write archives.
type Source struct {
	// DataDir is the data directory; every regular file under it is archived except
	// the live database, names in Skip, ".tmp-*" at any depth and ".restore-*".
	DataDir string
	// Database is the database's path relative to DataDir ("gardend.db"). The live
	// file is skipped: its content comes from Snapshot.
	Database string
	// Snapshot writes a consistent copy of the database. It runs first, before any
	// other file is read, so no database transaction spans the file copies.
	Snapshot func(w io.Writer) (int64, error)
	// DatabaseFormat says what Snapshot writes: DatabaseBBolt (the default) or
	// DatabaseArchive.
	DatabaseFormat string
	// Extra, when set, lists the entries to archive beside the snapshot that are not
	// files of DataDir (image content kept in the database); it is given the path of
	// the snapshot's copy. Each is copied into the spool when files are pinned; one
	// whose Open fails with fs.ErrNotExist is recorded as missing.
	Extra func(snapshot string) ([]Extra, error)
	// Skip lists further top-level names to leave out (the admin socket).
	Skip []string
	// Only, when set, lists the top-level names to archive: nothing else of DataDir is
	// (a node of a shared database keeps only caches there).
	Only []string
	// Recorded in the manifest.
	SchemaVersion  uint64
	GardendVersion string
	Created        time.Time
}

// Extra is an entry to archive that is no file of the data directory.
type Extra struct {
	// Path is the entry's path, as a file's relative to the data directory.
	Path string
	Open func() (io.ReadCloser, error)
}

// Result is what Write archived.
type Result struct {
	Manifest Manifest
	// Warnings name the files left out (the manifest's Missing and Skipped) in words.
	Warnings []string
}

// Writer writes archives of one data directory. Only one Writer may serve a data
// directory at a time, which holds because it lives in the process that holds the
// database lock: that is what lets it delete spool directories it does not own (left
// by a crash). Its methods are safe for concurrent use.
type Writer struct {
	mu     sync.Mutex
	active map[string]bool
	// hook, when set by a test, runs after each step ("listed", "pinned") so races
	// with deletions and rewrites can be staged.
	hook func(step string)
}

// NewWriter returns a Writer.
func NewWriter() *Writer { return &Writer{active: map[string]bool{}} }

// pinned is one file between the two passes: where to read it and what it held.
type pinned struct {
	entry Entry
	path  string
	mtime time.Time
}

// Write writes an archive of src to w. It returns an error, and w holds a damaged
// archive, when the snapshot or any file fails to read, a file changes between the
// passes, or ctx ends. Files that vanish before they are pinned are recorded in the
// manifest as missing and reported as warnings, not errors.
func (bw *Writer) Write(ctx context.Context, w io.Writer, src Source) (*Result, error) {
	if src.Database == "" || strings.ContainsAny(src.Database, `/\`) {
		return nil, fmt.Errorf("backup: database name %q must be a plain file name", src.Database)
	}
	spool, err := bw.openSpool(src.DataDir)
	if err != nil {
		return nil, err
	}
	defer bw.closeSpool(spool)

	res := &Result{Manifest: Manifest{
		Format: FormatName, FormatVersion: 1, GardendVersion: src.GardendVersion,
		Created: src.Created.UTC(), SchemaVersion: src.SchemaVersion, Database: src.Database,
	}}
	switch src.DatabaseFormat {
	case "", DatabaseBBolt:
	case DatabaseArchive:
		// Version 1 readers know only bbolt databases: they must refuse this one.
		res.Manifest.FormatVersion, res.Manifest.DatabaseFormat = FormatVersion, DatabaseArchive
	default:
		return nil, fmt.Errorf("backup: unknown database format %q", src.DatabaseFormat)
	}
	// Files are listed before and after the snapshot. A file exists before the record
	// naming it is committed and is deleted only after that record is (imagestore's
	// order), so every file the snapshot can refer to is in one listing or the other,
	// and one gone by the time it is pinned is reported, never silently absent.
	before, _, err := list(src)
	if err != nil {
		return nil, err
	}
	db, err := snapshot(ctx, spool, src)
	if err != nil {
		return nil, err
	}
	after, skipped, err := list(src)
	if err != nil {
		return nil, err
	}
	res.Manifest.Skipped = skipped
	for _, x := range skipped {
		res.Warnings = append(res.Warnings, x.Path+": left out: "+x.Reason)
	}
	files := slices.Compact(slices.Sorted(slices.Values(append(before, after...))))
	var extra []Extra
	if src.Extra != nil {
		if extra, err = src.Extra(db.path); err != nil {
			return nil, fmt.Errorf("backup: %w", err)
		}
	}
	bw.step("listed")
	all := []pinned{db}
	for i, x := range extra {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if slices.Contains(files, x.Path) {
			return nil, fmt.Errorf("backup: %s is both a file of the data directory and kept in the database", x.Path)
		}
		p, gone, err := spoolExtra(spool, i, x)
		switch {
		case err != nil:
			return nil, err
		case gone:
			res.Manifest.Missing = append(res.Manifest.Missing, Omitted{Path: x.Path, Reason: "deleted during the backup, before it could be copied"})
			res.Warnings = append(res.Warnings, x.Path+": deleted during the backup; recorded as missing")
		default:
			all = append(all, p)
		}
	}
	for i, rel := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p, gone, err := pin(src.DataDir, spool, len(extra)+i, rel)
		switch {
		case err != nil:
			return nil, err
		case gone:
			res.Manifest.Missing = append(res.Manifest.Missing, Omitted{Path: rel, Reason: "deleted during the backup, before it could be copied"})
			res.Warnings = append(res.Warnings, rel+": deleted during the backup; recorded as missing")
		default:
			all = append(all, p)
		}
	}
	// The database first, then everything else by path.
	slices.SortStableFunc(all[1:], func(a, b pinned) int { return strings.Compare(a.entry.Path, b.entry.Path) })
	for _, p := range all {
		res.Manifest.Entries = append(res.Manifest.Entries, p.entry)
	}
	bw.step("pinned")
	if err := writeTar(ctx, w, &res.Manifest, all); err != nil {
		return nil, err
	}
	return res, nil
}

func (bw *Writer) step(name string) {
	if bw.hook != nil {
		bw.hook(name)
	}
}

// openSpool creates this call's spool directory and deletes spools no live call owns.
func (bw *Writer) openSpool(dataDir string) (string, error) {
	bw.mu.Lock()
	defer bw.mu.Unlock()
	if entries, err := os.ReadDir(dataDir); err == nil {
		for _, e := range entries {
			p := filepath.Join(dataDir, e.Name())
			if strings.HasPrefix(e.Name(), spoolPrefix) && !bw.active[p] {
				_ = os.RemoveAll(p) // another start tries again
			}
		}
	}
	var b [8]byte
	rand.Read(b[:])
	p := filepath.Join(dataDir, spoolPrefix+hex.EncodeToString(b[:]))
	if err := os.Mkdir(p, 0o700); err != nil {
		return "", fmt.Errorf("backup: spool directory: %w", err)
	}
	bw.active[p] = true
	return p, nil
}

func (bw *Writer) closeSpool(p string) {
	_ = os.RemoveAll(p) // a leftover spool is removed at the next backup's start
	bw.mu.Lock()
	delete(bw.active, p)
	bw.mu.Unlock()
}

// snapshot writes the database copy into the spool, hashing it on the way.
func snapshot(ctx context.Context, spool string, src Source) (pinned, error) {
	path := filepath.Join(spool, "db")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return pinned{}, fmt.Errorf("backup: spool database: %w", err)
	}
	defer func() { _ = f.Close() }() // for the error paths: closed and checked below
	h := sha256.New()
	cw := &countWriter{w: io.MultiWriter(f, h), ctx: ctx}
	if _, err := src.Snapshot(cw); err != nil {
		return pinned{}, fmt.Errorf("backup: database snapshot: %w", err)
	}
	if err := f.Close(); err != nil {
		return pinned{}, fmt.Errorf("backup: spool database: %w", err)
	}
	return pinned{
		entry: Entry{Path: src.Database, Size: cw.n, SHA256: hex.EncodeToString(h.Sum(nil))},
		path:  path, mtime: src.Created,
	}, nil
}

// list walks the data directory for the files to archive, in lexical order, and the
// ones it leaves out on purpose.
func list(src Source) (files []string, skipped []Omitted, err error) {
	err = filepath.WalkDir(src.DataDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path != src.DataDir {
				return nil // a directory removed while we walk: nothing to copy
			}
			return fmt.Errorf("backup: list %s: %w", path, err)
		}
		if path == src.DataDir {
			return nil
		}
		rel, err := filepath.Rel(src.DataDir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		name := d.Name()
		top := !strings.Contains(rel, "/")
		if strings.HasPrefix(name, tempPrefix) ||
			top && (name == src.Database || strings.HasPrefix(name, restorePrefix) || slices.Contains(src.Skip, name) ||
				src.Only != nil && !slices.Contains(src.Only, name)) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		why := ""
		if !d.Type().IsRegular() {
			why = "not a regular file"
		} else if err := CheckPath(rel); err != nil {
			why = err.Error()
		}
		if why != "" {
			skipped = append(skipped, Omitted{Path: rel, Reason: why})
			return nil
		}
		files = append(files, rel)
		return nil
	})
	return files, skipped, err
}

// pin hard-links a file into the spool, so a deletion before the second pass cannot
// take it away, and hashes it. Where links are unsupported it hashes the original.
// gone reports a file deleted before it could be pinned.
func pin(dataDir, spool string, i int, rel string) (p pinned, gone bool, err error) {
	orig := filepath.Join(dataDir, filepath.FromSlash(rel))
	path := filepath.Join(spool, strconv.Itoa(i))
	if err := os.Link(orig, path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return pinned{}, true, nil
		}
		path = orig
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return pinned{}, true, nil
	}
	if err != nil {
		return pinned{}, false, fmt.Errorf("backup: %w", err)
	}
	defer func() { _ = f.Close() }() // read only
	info, err := f.Stat()
	if err != nil {
		return pinned{}, false, fmt.Errorf("backup: %w", err)
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return pinned{}, false, fmt.Errorf("backup: read %s: %w", rel, err)
	}
	return pinned{
		entry: Entry{Path: rel, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))},
		path:  path, mtime: info.ModTime(),
	}, false, nil
}

// spoolExtra copies an extra entry into the spool, hashing it; gone reports one that
// no longer exists.
func spoolExtra(spool string, i int, x Extra) (p pinned, gone bool, err error) {
	if err := CheckPath(x.Path); err != nil {
		return pinned{}, false, fmt.Errorf("backup: %w", err)
	}
	rc, err := x.Open()
	if errors.Is(err, fs.ErrNotExist) {
		return pinned{}, true, nil
	}
	if err != nil {
		return pinned{}, false, fmt.Errorf("backup: open %s: %w", x.Path, err)
	}
	defer func() { _ = rc.Close() }() // read only
	path := filepath.Join(spool, "x"+strconv.Itoa(i))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return pinned{}, false, fmt.Errorf("backup: spool %s: %w", x.Path, err)
	}
	defer func() { _ = f.Close() }() // for the error paths: closed and checked below
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), rc)
	if errors.Is(err, fs.ErrNotExist) {
		return pinned{}, true, nil // removed while it was read
	}
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		return pinned{}, false, fmt.Errorf("backup: copy %s: %w", x.Path, err)
	}
	return pinned{entry: Entry{Path: x.Path, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, path: path, mtime: time.Now()}, false, nil
}

// writeTar writes the manifest and then every pinned file, re-hashing each so a file
// rewritten in place between the passes fails the backup instead of corrupting it.
func writeTar(ctx context.Context, w io.Writer, m *Manifest, files []pinned) error {
	body, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: ManifestName, Size: int64(len(body)), Mode: 0o600, ModTime: m.Created}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("backup: write: %w", err)
	}
	if _, err := tw.Write(body); err != nil {
		return fmt.Errorf("backup: write: %w", err)
	}
	for _, p := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := copyEntry(tw, p); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("backup: write: %w", err)
	}
	return nil
}

func copyEntry(tw *tar.Writer, p pinned) error {
	f, err := os.Open(p.path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s was deleted (links are unsupported here, so it could not be pinned); run the backup again", ErrChanged, p.entry.Path)
	}
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer func() { _ = f.Close() }() // read only
	hdr := &tar.Header{
		Typeflag: tar.TypeReg, Name: DataPrefix + p.entry.Path, Size: p.entry.Size,
		Mode: 0o600, ModTime: p.mtime.Truncate(time.Second),
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("backup: write: %w", err)
	}
	h := sha256.New()
	_, err = io.CopyN(tw, io.TeeReader(f, h), p.entry.Size)
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %s shrank; run the backup again", ErrChanged, p.entry.Path)
	}
	if err != nil {
		return fmt.Errorf("backup: copy %s: %w", p.entry.Path, err)
	}
	if hex.EncodeToString(h.Sum(nil)) != p.entry.SHA256 {
		return fmt.Errorf("%w: %s was rewritten; run the backup again", ErrChanged, p.entry.Path)
	}
	return nil
}

// countWriter counts bytes and stops the snapshot when ctx ends.
type countWriter struct {
	w   io.Writer
	ctx context.Context
	n   int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

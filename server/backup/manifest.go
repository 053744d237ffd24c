package backup

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"
	"unicode/utf8"
)

const (
	// FormatName and FormatVersion identify the archive layout. A reader refuses a
	// newer version rather than guess at it.
	FormatName = "gardend-backup"
	// FormatVersion is the newest layout this build reads and writes. Version 2 added
	// DatabaseFormat; an archive whose database is a bbolt file is still written as
	// version 1, so that older gardends restore it.
	FormatVersion = 2

	// DatabaseBBolt and DatabaseArchive are the kinds of database entry: a copy of
	// the bbolt file, or every record as a store archive (JSON lines, store/archive.go)
	// from a backend that keeps no file, with the image content as entries beside it.
	DatabaseBBolt   = "bbolt"
	DatabaseArchive = "archive"

	// ManifestName is the first tar entry; every other entry is DataPrefix + path.
	ManifestName = "manifest.json"
	DataPrefix   = "data/"

	// MaxManifestBytes bounds the manifest, and so the memory a reader spends before
	// the first data byte: about 400,000 entries.
	MaxManifestBytes = 64 << 20
	// MaxEntries bounds the number of entries a manifest may list.
	MaxEntries = 1 << 20
	// MaxPathBytes bounds one entry's path.
	MaxPathBytes = 1024
	// DefaultMaxTotal is the default cap on the sum of all entry sizes a reader
	// accepts, so a forged manifest cannot make a restore fill the disk without end.
	DefaultMaxTotal = 1 << 40
)

// Sentinel errors; every error from reading an archive wraps one of them.
var (
	// ErrFormat: the stream is not a gardend backup archive, or is damaged or
	// truncated.
	ErrFormat = errors.New("not a valid gardend backup")
	// ErrChecksum: an entry's content does not match the manifest.
	ErrChecksum = errors.New("backup entry does not match its checksum")
	// ErrUnsafePath: an entry would be written outside the target, or is not a
	// regular file.
	ErrUnsafePath = errors.New("unsafe entry in backup")
	// ErrTooLarge: the archive exceeds a size limit.
	ErrTooLarge = errors.New("backup exceeds a size limit")
	// ErrNewer: the archive was written by a newer gardend than this one.
	ErrNewer = errors.New("backup is from a newer gardend")
	// ErrChanged: a file changed while it was being backed up.
	ErrChanged = errors.New("file changed during the backup")
	// ErrNotEmpty: restore target holds data and Force was not set.
	ErrNotEmpty = errors.New("data directory is not empty")
	// ErrInterrupted: the target holds what an interrupted restore left behind.
	ErrInterrupted = errors.New("data directory holds an interrupted restore")
	// ErrBusy: a restore, resume or rollback is running on the directory.
	ErrBusy = errors.New("a restore is running on the data directory")
	// ErrBadDatabase: the database in the archive fails its own check.
	ErrBadDatabase = errors.New("the database in the backup is damaged")
)

// Manifest describes an archive.
type Manifest struct {
	Format         string    `json:"format"`
	FormatVersion  int       `json:"format_version"`
	GardendVersion string    `json:"gardend_version"`
	Created        time.Time `json:"created"`
	// SchemaVersion is the database schema of the snapshot.
	SchemaVersion uint64 `json:"schema_version"`
	// Database is the path of the database snapshot among Entries.
	Database string `json:"database"`
	// DatabaseFormat is DatabaseBBolt (or empty, in version 1) or DatabaseArchive.
	DatabaseFormat string  `json:"database_format,omitempty"`
	Entries        []Entry `json:"entries"`
	// Missing lists files that were listed for the backup but gone before they could
	// be copied (deleted by a request meanwhile).
	Missing []Omitted `json:"missing,omitempty"`
	// Skipped lists files left out on purpose: not regular files, or names that
	// cannot be restored safely everywhere.
	Skipped []Omitted `json:"skipped,omitempty"`
}

// Entry is one file of the archive.
type Entry struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Omitted is a file the archive does not hold, and why.
type Omitted struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// TotalBytes is the sum of all entry sizes.
func (m *Manifest) TotalBytes() int64 {
	var n int64
	for _, e := range m.Entries {
		n += e.Size
	}
	return n
}

// validate checks everything a reader relies on before it reads data: known format,
// safe unique paths, sane sizes and checksums, and a total within maxTotal.
func (m *Manifest) validate(maxTotal int64) error {
	if m.Format != FormatName {
		return fmt.Errorf("%w: manifest format %q, want %q", ErrFormat, m.Format, FormatName)
	}
	if m.FormatVersion > FormatVersion {
		return fmt.Errorf("%w: archive format version %d, this gardend reads up to %d: use a newer gardend", ErrNewer, m.FormatVersion, FormatVersion)
	}
	if m.FormatVersion < 1 {
		return fmt.Errorf("%w: archive format version %d", ErrFormat, m.FormatVersion)
	}
	if len(m.Entries) > MaxEntries {
		return fmt.Errorf("%w: %d entries, at most %d", ErrTooLarge, len(m.Entries), MaxEntries)
	}
	seen := make(map[string]bool, len(m.Entries))
	var total int64
	for _, e := range m.Entries {
		if err := CheckPath(e.Path); err != nil {
			return err
		}
		if seen[e.Path] {
			return fmt.Errorf("%w: %q is listed twice", ErrFormat, e.Path)
		}
		seen[e.Path] = true
		if e.Size < 0 {
			return fmt.Errorf("%w: %q has negative size", ErrFormat, e.Path)
		}
		if e.Size > maxTotal-total {
			return fmt.Errorf("%w: entries add up to more than %d bytes", ErrTooLarge, maxTotal)
		}
		total += e.Size
		if !isSHA256Hex(e.SHA256) {
			return fmt.Errorf("%w: %q has no valid sha256", ErrFormat, e.Path)
		}
	}
	if !seen[m.Database] {
		return fmt.Errorf("%w: the database entry %q is not in the manifest", ErrFormat, m.Database)
	}
	switch m.DatabaseFormat {
	case "", DatabaseBBolt:
	case DatabaseArchive:
		if m.FormatVersion < 2 {
			return fmt.Errorf("%w: a version %d archive cannot hold a %s database", ErrFormat, m.FormatVersion, m.DatabaseFormat)
		}
	default:
		return fmt.Errorf("%w: unknown database format %q", ErrFormat, m.DatabaseFormat)
	}
	return nil
}

// RecordsArchive reports whether the database entry is a store archive (JSON lines)
// rather than a bbolt file.
func (m *Manifest) RecordsArchive() bool { return m.DatabaseFormat == DatabaseArchive }

// CheckPath accepts a relative, slash-separated path that stays inside the directory
// it is joined to on every platform: no "..", ".", empty or absolute elements, no
// backslashes, colons or control characters, and no name reserved by restore.
func CheckPath(p string) error {
	bad := func(why string) error { return fmt.Errorf("%w: path %q %s", ErrUnsafePath, p, why) }
	switch {
	case len(p) > MaxPathBytes:
		return fmt.Errorf("%w: path of %d bytes, at most %d", ErrUnsafePath, len(p), MaxPathBytes)
	case !utf8.ValidString(p):
		return bad("is not UTF-8")
	case !fs.ValidPath(p) || p == ".":
		return bad("is not a clean relative path")
	case strings.ContainsAny(p, `\:`):
		return bad("contains a backslash or colon")
	case strings.HasPrefix(p, restorePrefix):
		return bad("uses a name reserved for restore")
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return bad("contains a control character")
		}
	}
	return nil
}

func isSHA256Hex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

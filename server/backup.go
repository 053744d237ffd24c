package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"runtime/debug"
	"strings"

	"github.com/gardend/gardend/server/backup"
	"github.com/gardend/gardend/server/pointcloud"
	"github.com/gardend/gardend/server/tiles"
	"github.com/gardend/gardend/store"
)

// maxConcurrentBackups: each running backup spools a copy of the database into the
// data directory, so a burst of requests must not fill the disk.
const maxConcurrentBackups = 2

// backupState is the Admin's share of backups, shared by the admin socket and
// GET /admin/backup.
type backupState struct {
	writer *backup.Writer
	slots  chan struct{}
}

func newBackupState() *backupState {
	return &backupState{writer: backup.NewWriter(), slots: make(chan struct{}, maxConcurrentBackups)}
}

// backupRun writes one archive; it must be called exactly once (it frees the slot).
type backupRun func(w io.Writer) (*backup.Result, error)

// startBackup reserves a slot before anything is sent, so "busy" can still be a 503.
func (a *Admin) startBackup(ctx context.Context) (backupRun, error) {
	select {
	case a.backups.slots <- struct{}{}:
	default:
		return nil, &apiError{status: http.StatusServiceUnavailable, detail: "other backups are running; try again when one has finished"}
	}
	src := a.backupSource(ctx)
	return func(w io.Writer) (*backup.Result, error) {
		defer func() { <-a.backups.slots }()
		return a.backups.writer.Write(ctx, w, src)
	}, nil
}

// RecordsName is the database entry of a backup of a shared backend: every record
// as a store archive (JSON lines).
const RecordsName = "records.jsonl"

// backupSource says what a backup holds. A bbolt database is copied as its file, with
// every other file of the data directory. A shared database (PostgreSQL) keeps no
// file: its records are written as a store archive, the image content it keeps goes
// beside them as the files a bbolt install would have (images/…), and of the node's
// data directory only its point-cloud cache and identity go along. Either restores
// into either backend.
func (a *Admin) backupSource(ctx context.Context) backup.Source {
	src := backup.Source{
		DataDir:        a.dataDir,
		Skip:           []string{AdminSocketName, SigningKeyFileName, tiles.DirName}, // tiles: rebuilt from the images
		GardendVersion: gardendVersion(),
		Created:        a.store.Now(),
	}
	shared, isShared := a.store.(store.Shared)
	if snap, ok := a.store.(store.Snapshotter); ok && !isShared {
		src.Database, src.Snapshot, src.SchemaVersion = snap.SnapshotName(), snap.WriteSnapshot, snap.SchemaVersion()
		return src
	}
	src.Database, src.DatabaseFormat, src.SchemaVersion = RecordsName, backup.DatabaseArchive, store.ArchiveFormat
	src.Only = []string{pointcloud.DirName, DataIDFile}
	src.Snapshot = func(w io.Writer) (int64, error) {
		cw := &countingWriter{w: w}
		err := a.store.Export(ctx, cw)
		return cw.n, err
	}
	if isShared {
		photos, _ := a.store.(store.PhotoContent)
		src.Extra = func(snapshot string) ([]backup.Extra, error) { return imageEntries(ctx, snapshot, shared, photos) }
	}
	return src
}

// imageEntries lists the images the gardens of a records archive show, and the photo
// content its photos refer to (when photos is set), each read from content when the
// backup copies it.
func imageEntries(ctx context.Context, records string, content store.ImageContent, photos store.PhotoContent) ([]backup.Extra, error) {
	f, err := os.Open(records)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only
	var out []backup.Extra
	_, err = store.ReadArchive(ctx, f, func(kind string, rec any) error {
		if g, ok := rec.(*store.ArchivedGarden); ok && g.ImagePath != nil {
			path := *g.ImagePath
			out = append(out, backup.Extra{Path: path, Open: func() (io.ReadCloser, error) {
				rc, _, err := content.OpenImage(ctx, path)
				if errors.Is(err, store.ErrNotFound) {
					// Replaced (and removed) since the snapshot: missing, as a file
					// deleted during a backup is.
					return nil, fmt.Errorf("%w: %w", fs.ErrNotExist, err)
				}
				return rc, err
			}})
		}
		if p, ok := rec.(*store.Photo); ok && photos != nil {
			for _, path := range []string{p.Path, p.ThumbPath} {
				if path == "" {
					continue
				}
				out = append(out, backup.Extra{Path: path, Open: func() (io.ReadCloser, error) {
					rc, _, err := photos.OpenPhoto(ctx, path)
					if errors.Is(err, store.ErrNotFound) {
						return nil, fmt.Errorf("%w: %w", fs.ErrNotExist, err) // deleted since the snapshot
					}
					return rc, err
				}})
			}
		}
		return nil
	}, nil) // image paths are never repaired: the text of names is no concern here
	return out, err
}

// BackupCreate streams a backup archive ("backup.create").
type BackupCreate struct{}

func (BackupCreate) OpName() string    { return "backup.create" }
func (BackupCreate) MediaType() string { return "application/x-tar" }

func (BackupCreate) start(ctx context.Context, a *Admin) (func(io.Writer) error, error) {
	run, err := a.startBackup(ctx)
	if err != nil {
		return nil, err
	}
	return func(w io.Writer) error {
		// Files left out are listed in the manifest, which the CLI reads back.
		_, err := run(w)
		return err
	}, nil
}

func (s *Server) backupRoutes() []route {
	return []route{
		{method: "GET", path: "/admin/backup", handler: s.handleBackup},
	}
}

// handleBackup streams the same archive as `gardend backup` to a site administrator.
func (s *Server) handleBackup(w http.ResponseWriter, r *http.Request) {
	if u := currentUser(r); u == nil || !u.SiteAdmin {
		s.writeError(w, r, forbidden("only site administrators may download backups"))
		return
	}
	run, err := s.admin.startBackup(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/x-tar")
	h.Set("Content-Disposition", `attachment; filename="gardend-`+s.cfg.Now().UTC().Format("20060102T150405Z")+`.tar"`)
	// A large archive outlives any write timeout: each chunk moves the deadline, so the
	// download runs as long as it progresses and a client that stops reading is dropped.
	cw := &countingWriter{w: w, beforeWrite: func() error { return s.extendWriteDeadline(w) }}
	res, err := run(cw)
	if err != nil {
		if cw.n == 0 {
			h.Del("Content-Disposition")
			s.writeError(w, r, err)
			return
		}
		s.log.Error().Err(err).Str("request_id", requestID(r)).Int64("bytes", cw.n).Msg("backup failed mid-stream; aborting the response")
		// Abort the connection so the client sees a cut-off body, not a clean end.
		panic(http.ErrAbortHandler)
	}
	ev := s.log.Info().Str("request_id", requestID(r)).Int("entries", len(res.Manifest.Entries)).
		Int64("bytes", cw.n).Int("missing", len(res.Manifest.Missing))
	if len(res.Warnings) > 0 {
		ev = ev.Strs("warnings", res.Warnings)
	}
	ev.Msg("backup sent")
}

type countingWriter struct {
	w           io.Writer
	n           int64
	beforeWrite func() error
}

func (c *countingWriter) Write(b []byte) (int, error) {
	if c.beforeWrite != nil {
		if err := c.beforeWrite(); err != nil {
			return 0, err
		}
	}
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// oneLine makes text safe for a header value.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// gardendVersion is the module version and VCS revision, for the manifest.
func gardendVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := info.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision":
			v += " " + s.Value
		case s.Key == "vcs.modified" && s.Value == "true":
			v += "+dirty"
		}
	}
	return v
}

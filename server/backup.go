package server

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/gardend/gardend/server/backup"
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
	dataDir := filepath.Dir(a.store.Path())
	return func(w io.Writer) (*backup.Result, error) {
		defer func() { <-a.backups.slots }()
		return a.backups.writer.Write(ctx, w, backup.Source{
			DataDir:        dataDir,
			Database:       filepath.Base(a.store.Path()),
			Snapshot:       a.store.WriteSnapshot,
			Skip:           []string{AdminSocketName, SigningKeyFileName},
			SchemaVersion:  store.SchemaVersion(),
			GardendVersion: gardendVersion(),
			Created:        a.store.Now(),
		})
	}, nil
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
	cw := &countingWriter{w: w, beforeWrite: func() { s.extendWriteDeadline(w) }}
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
	beforeWrite func()
}

func (c *countingWriter) Write(b []byte) (int, error) {
	if c.beforeWrite != nil {
		c.beforeWrite()
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

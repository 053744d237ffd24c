package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gardend/gardend/store"
)

// failAfter is a ResponseWriter whose connection breaks after n bytes.
type failAfter struct {
	*httptest.ResponseRecorder
	n int
}

func (f *failAfter) Write(b []byte) (int, error) {
	if len(b) > f.n {
		w, _ := f.ResponseRecorder.Write(b[:f.n])
		f.n = 0
		return w, errors.New("connection reset")
	}
	f.n -= len(b)
	return f.ResponseRecorder.Write(b)
}

func newTestAdmin(t *testing.T) *Admin {
	t.Helper()
	dir := t.TempDir()
	st := openTestBolt(t, dir)
	t.Cleanup(func() { st.Close() })
	return NewAdmin(st, store.NewPasswords(store.Argon2Params{Time: 1, Memory: 64, Threads: 1, KeyLen: 32}, 1), dir)
}

// download starts a backup and returns its writer.
func download(t *testing.T, a *Admin) func(io.Writer) error {
	t.Helper()
	write, err := BackupCreate{}.start(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	return write
}

// Once bytes are out, a failure can only travel in a trailer on the admin socket; in
// process it is returned; before the first byte, it is a plain problem answer.
func TestBackupStreamReportsFailures(t *testing.T) {
	a := newTestAdmin(t)

	rec := &failAfter{ResponseRecorder: httptest.NewRecorder(), n: 1000}
	sendDownload(rec, "backup.create", download(t, a))
	if got := rec.Result().Trailer.Get(AdminErrorTrailer); !strings.Contains(got, "connection reset") {
		t.Fatalf("trailer %q", got)
	}

	err := RunAdminDownload(context.Background(), a, BackupCreate{}, &brokenWriter{n: 1000})
	if err == nil || !strings.Contains(err.Error(), "broken") {
		t.Fatalf("in process: %v", err)
	}

	a.store.Close() // the snapshot fails before the first byte
	rec2 := httptest.NewRecorder()
	sendDownload(rec2, "backup.create", download(t, a))
	if rec2.Code != http.StatusInternalServerError || !strings.Contains(rec2.Body.String(), "backup.create failed") {
		t.Fatalf("got %d %s", rec2.Code, rec2.Body.String())
	}
}

// brokenWriter takes n bytes, then fails.
type brokenWriter struct{ n int }

func (f *brokenWriter) Write(b []byte) (int, error) {
	if len(b) > f.n {
		return 0, errors.New("broken")
	}
	f.n -= len(b)
	return len(b), nil
}

func TestBackupSlotsAreLimited(t *testing.T) {
	a := newTestAdmin(t)
	var runs []backupRun
	for range maxConcurrentBackups {
		run, err := a.startBackup(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, run)
	}
	_, err := a.startBackup(context.Background())
	var api *apiError
	if !errors.As(err, &api) || api.status != http.StatusServiceUnavailable {
		t.Fatalf("third backup: %v", err)
	}
	if _, err := runs[0](io.Discard); err != nil {
		t.Fatal(err)
	}
	if _, err := a.startBackup(context.Background()); err != nil {
		t.Fatalf("a finished backup frees its slot: %v", err)
	}
}

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

func stream(t *testing.T, a *Admin) StreamResult {
	t.Helper()
	res, err := a.Do(context.Background(), BackupOp, []byte("{}"))
	if err != nil {
		t.Fatal(err)
	}
	return res.(StreamResult)
}

// Once bytes are out, a failure can only travel in a trailer (the admin socket) or
// through CloseWithError (in-process); before that, it is a plain problem answer.
func TestBackupStreamReportsFailures(t *testing.T) {
	a := newTestAdmin(t)

	rec := &failAfter{ResponseRecorder: httptest.NewRecorder(), n: 1000}
	stream(t, a)(rec)
	if got := rec.Result().Trailer.Get(BackupErrorTrailer); !strings.Contains(got, "connection reset") {
		t.Fatalf("trailer %q", got)
	}

	pr, pw := io.Pipe()
	go stream(t, a)(&failAfter2{pw: pw, n: 1000})
	if _, err := io.ReadAll(pr); err == nil || !strings.Contains(err.Error(), "broken") {
		t.Fatalf("in-process reader got %v", err)
	}

	a.store.Close() // the snapshot fails before the first byte
	rec2 := httptest.NewRecorder()
	stream(t, a)(rec2)
	if rec2.Code != http.StatusInternalServerError || !strings.Contains(rec2.Body.String(), "backup failed") {
		t.Fatalf("got %d %s", rec2.Code, rec2.Body.String())
	}
}

// failAfter2 passes n bytes to a pipe, then fails; the stream must close the pipe
// with its error so the reader sees it.
type failAfter2 struct {
	pw *io.PipeWriter
	n  int
}

func (f *failAfter2) Write(b []byte) (int, error) {
	if len(b) > f.n {
		return 0, errors.New("broken")
	}
	f.n -= len(b)
	return f.pw.Write(b)
}

func (f *failAfter2) CloseWithError(err error) error { return f.pw.CloseWithError(err) }

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

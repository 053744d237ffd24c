package atomicfile_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/gardend/gardend/server/atomicfile"
)

// entries lists the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}

func TestWriteFileReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "id")
	for _, content := range []string{"first\n", "second\n"} {
		if err := atomicfile.WriteFile(path, []byte(content), atomicfile.Options{}); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("read %q, %v; want %q", got, err, content)
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Errorf("directory holds %v, want only the file", names)
	}
}

// TestWriteFailureKeepsOldContent: a fill that fails leaves the old content and no
// temporary file.
func TestWriteFailureKeepsOldContent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cloud.ply")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("disk full")
	_, err := atomicfile.Write(path, atomicfile.Options{Pattern: ".tmp-*.ply"}, func(w io.Writer) error {
		w.Write([]byte("half"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want %v", err, boom)
	}
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Errorf("content %q after a failed write, want the old one", got)
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Errorf("directory holds %v after a failed write", names)
	}
}

func TestWriteReportsSize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	n, err := atomicfile.Write(path, atomicfile.Options{}, func(w io.Writer) error {
		_, err := w.Write(make([]byte, 1234))
		return err
	})
	if err != nil || n != 1234 {
		t.Fatalf("size %d, %v; want 1234", n, err)
	}
}

// TestCreateFixedTemp: a fixed temporary name left by an earlier run (with a wider
// mode) is truncated and tightened, and gone once committed.
func TestCreateFixedTemp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "backup.tar")
	stale := path + ".tmp"
	if err := os.WriteFile(stale, []byte("a stale, longer partial archive"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := atomicfile.Create(path, atomicfile.Options{Temp: stale})
	if err != nil {
		t.Fatal(err)
	}
	if f.Name() != stale {
		t.Errorf("temporary file %s, want %s", f.Name(), stale)
	}
	st, err := f.Stat()
	if err != nil || st.Size() != 0 || st.Mode().Perm() != 0o600 {
		t.Fatalf("stale temporary file not truncated to a 0600 file: %v, %v", st, err)
	}
	f.WriteString("archive")
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := f.Commit(); err == nil {
		t.Error("a second Commit succeeded")
	}
	f.Abort() // a no-op after Commit
	if got, _ := os.ReadFile(path); string(got) != "archive" {
		t.Errorf("content %q", got)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary file still there: %v", err)
	}
}

func TestAbortRemovesTemporaryFile(t *testing.T) {
	dir := t.TempDir()
	f, err := atomicfile.Create(filepath.Join(dir, "key"), atomicfile.Options{Pattern: ".tmp-key-*"})
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("secret")
	f.Abort()
	if names := entries(t, dir); len(names) != 0 {
		t.Errorf("directory holds %v after Abort", names)
	}
	if err := f.Commit(); err == nil {
		t.Error("Commit after Abort succeeded")
	}
}

func TestSyncDirMissing(t *testing.T) {
	if err := atomicfile.SyncDir(filepath.Join(t.TempDir(), "gone")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("SyncDir of a missing directory: %v", err)
	}
}

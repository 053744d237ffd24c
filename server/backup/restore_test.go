package backup_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gardend/gardend/server/backup"
	"github.com/gardend/gardend/server/backup/backuptest"
)

func okDB(string, *backup.Manifest) error { return nil }

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRestoreIntoAMissingDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "data")
	var checked string
	m, err := backup.Restore(bytes.NewReader(backuptest.Archive(validEntries(), nil)), dir, backup.RestoreOptions{
		CheckDB: func(path string, m *backup.Manifest) error {
			checked = path
			if b, err := os.ReadFile(path); err != nil || string(b) != "database bytes" {
				t.Errorf("CheckDB sees %q, %v", b, err)
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Entries) != 3 || !strings.Contains(checked, ".restore-tmp-") {
		t.Fatalf("manifest %+v, checked %s", m, checked)
	}
	want := []string{".", "gardend.db", "images", "images/a.png", "pointclouds", "pointclouds/p", "pointclouds/p/g.ply"}
	if got := listDir(t, dir); !slices.Equal(got, want) {
		t.Fatalf("restored %q", got)
	}
	for _, e := range validEntries() {
		b, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(e.Path)))
		if !bytes.Equal(b, e.Body) {
			t.Errorf("%s differs", e.Path)
		}
	}
}

func TestRestoreRefusesANonEmptyDirectoryWithoutForce(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"gardend.db": "old", "images/old.png": "old image"})
	_, err := backup.Restore(bytes.NewReader(backuptest.Archive(validEntries(), nil)), dir, backup.RestoreOptions{CheckDB: okDB})
	if !errors.Is(err, backup.ErrNotEmpty) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "gardend.db, images") {
		t.Fatalf("got %v", err)
	}
	if got := listDir(t, dir); !slices.Equal(got, []string{".", "gardend.db", "images", "images/old.png"}) {
		t.Fatalf("directory changed: %q", got)
	}
}

func TestRestoreForceReplacesEverything(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"gardend.db": "old", "images/old.png": "old image", "admin.sock": "stale"})
	if _, err := backup.Restore(bytes.NewReader(backuptest.Archive(validEntries(), nil)), dir, backup.RestoreOptions{CheckDB: okDB, Force: true}); err != nil {
		t.Fatal(err)
	}
	want := []string{".", "gardend.db", "images", "images/a.png", "pointclouds", "pointclouds/p", "pointclouds/p/g.ply"}
	if got := listDir(t, dir); !slices.Equal(got, want) {
		t.Fatalf("after restore %q", got)
	}
}

func TestRestoreRefusesLeftoversOfAnInterruptedRestore(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{".restore-old-20261122T080000Z-abcdef/gardend.db": "old"})
	_, err := backup.Restore(bytes.NewReader(backuptest.Archive(validEntries(), nil)), dir, backup.RestoreOptions{CheckDB: okDB, Force: true})
	if !errors.Is(err, backup.ErrInterrupted) || !strings.Contains(err.Error(), ".restore-old-") {
		t.Fatalf("got %v", err)
	}
}

// Every failure before the switch leaves the directory exactly as it was.
func TestRestoreFailuresLeaveTheDirectoryAlone(t *testing.T) {
	valid := backuptest.Archive(validEntries(), nil)
	corrupt := bytes.Clone(valid)
	corrupt[bytes.Index(corrupt, []byte("image bytes"))] ^= 1
	boom := errors.New("boom")
	cases := []struct {
		name   string
		data   []byte
		opts   backup.RestoreOptions
		want   error
		exists bool // the target existed before
	}{
		{"checksum", corrupt, backup.RestoreOptions{CheckDB: okDB, Force: true}, backup.ErrChecksum, true},
		{"truncated", valid[:len(valid)/2], backup.RestoreOptions{CheckDB: okDB, Force: true}, backup.ErrFormat, true},
		{"database check", valid, backup.RestoreOptions{CheckDB: func(string, *backup.Manifest) error { return boom }, Force: true}, boom, true},
		{"before switch", valid, backup.RestoreOptions{CheckDB: okDB, BeforeSwitch: func() error { return boom }, Force: true}, boom, true},
		{"new directory", corrupt, backup.RestoreOptions{CheckDB: okDB}, backup.ErrChecksum, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			var before []string
			if tc.exists {
				writeFiles(t, dir, map[string]string{"gardend.db": "old", "images/old.png": "old image"})
				before = listDir(t, dir)
			}
			_, err := backup.Restore(bytes.NewReader(tc.data), dir, tc.opts)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if !tc.exists {
				if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("restore left the directory it created: %v", err)
				}
				return
			}
			if got := listDir(t, dir); !slices.Equal(got, before) {
				t.Fatalf("directory changed:\n%q\nwas\n%q", got, before)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "gardend.db")); string(b) != "old" {
				t.Fatal("old database changed")
			}
		})
	}
}

package server

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gardend/gardend/server/pointcloud"
	"github.com/gardend/gardend/store"
)

// newSweepServer is a server on a fresh data directory with one bed of project kept.
func newSweepServer(t *testing.T, kept string) *Server {
	t.Helper()
	s, err := newForTest(t, Config{DataDir: t.TempDir(), Argon2: store.Argon2Params{Time: 1, Memory: 64, Threads: 1, KeyLen: 32}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	u, err := s.store.CreateUser(store.NewUser{Username: "ann", FirstName: "A", LastName: "B", PasswordHash: "x"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.store.CreateCompany(u.ID, "Farm")
	if err != nil {
		t.Fatal(err)
	}
	g, err := s.store.CreateGarden(c.ID, "Garden")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.store.CreateBed(g.ID, kept, "bed"); err != nil {
		t.Fatal(err)
	}
	return s
}

func writeFiles(t *testing.T, root string, rels ...string) {
	t.Helper()
	for _, rel := range rels {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("ply"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// TestSweepRemovesCloudsNoBedRefersTo: the start-up sweep deletes the PLY files of
// projects no bed refers to (beds removed while the files could not be deleted), but
// nothing while a restore is pending, and nothing it does not recognise as its own
// (issue 11, bug 5).
func TestSweepRemovesCloudsNoBedRefersTo(t *testing.T) {
	const (
		kept   = "3fa85f64-5717-4562-b3fc-2c963f66afa6"
		orphan = "9c1d2e3f-0000-4000-8000-000000000001"
		cloud  = "0b5e8a1c-1111-4111-8111-111111111111"
	)
	s := newSweepServer(t, kept)
	root := filepath.Join(s.cfg.DataDir, pointcloud.DirName)
	keptFile := filepath.Join(kept, cloud+".ply")
	orphanFile := filepath.Join(orphan, cloud+".ply")
	tempFile := filepath.Join(kept, ".tmp-123.ply")
	foreign := filepath.Join("notes.d", "readme.txt") // not a project name
	writeFiles(t, root, keptFile, orphanFile, tempFile, foreign)

	// A restore is pending: its files must not change under it.
	marker := filepath.Join(s.cfg.DataDir, ".restore-new-20261122T080000Z")
	if err := os.Mkdir(marker, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := s.sweepPointClouds(); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{keptFile, orphanFile, tempFile, foreign} {
		if !exists(filepath.Join(root, rel)) {
			t.Fatalf("%s deleted while a restore was pending", rel)
		}
	}

	os.Remove(marker)
	if err := s.sweepPointClouds(); err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]bool{keptFile: true, orphanFile: false, orphan: false, tempFile: false, foreign: true} {
		if got := exists(filepath.Join(root, rel)); got != want {
			t.Errorf("%s exists: %v, want %v", rel, got, want)
		}
	}
}

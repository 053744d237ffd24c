package backup

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var testCreated = time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)

// dataDir lays out a data directory with files the backup must take and files it
// must leave out, and returns it with the files expected in the archive.
func dataDir(t testing.TB) (string, map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	want := map[string][]byte{
		"images/0123.png":         []byte("png bytes"),
		"pointclouds/p1/g1.ply":   bytes.Repeat([]byte("ply"), 1000),
		"pointclouds/p1/g2.ply":   []byte("second"),
		"pointclouds/p2/deep.ply": {},
		"future/unknown.bin":      []byte("a file of a feature not written yet"),
	}
	leftOut := map[string][]byte{
		"gardend.db":                []byte("live database: comes from the snapshot"),
		"admin.sock":                []byte("socket stand-in"),
		"images/.tmp-123":           []byte("upload in progress"),
		".tmp-backup-0/db":          []byte("a crashed backup's spool"),
		".restore-old-1/gardend.db": []byte("an interrupted restore"),
	}
	for _, files := range []map[string][]byte{want, leftOut} {
		for rel, body := range files {
			p := filepath.Join(dir, filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, body, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "images", "link.png")); err != nil {
		t.Fatal(err)
	}
	return dir, want
}

var testDB = []byte("snapshot of the database")

func source(dir string) Source {
	return Source{
		DataDir: dir, Database: "gardend.db", Skip: []string{"admin.sock"},
		Snapshot: func(w io.Writer) (int64, error) {
			n, err := w.Write(testDB)
			return int64(n), err
		},
		SchemaVersion: 1, GardendVersion: "test", Created: testCreated,
	}
}

// untar returns every entry of an archive in order.
func untar(t testing.TB, data []byte) (names []string, bodies map[string][]byte) {
	t.Helper()
	bodies = map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return names, bodies
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hdr.Name)
		bodies[hdr.Name] = b
	}
}

func TestWriteTakesDataFilesAndLeavesOutTheRest(t *testing.T) {
	dir, want := dataDir(t)
	var buf bytes.Buffer
	res, err := NewWriter().Write(context.Background(), &buf, source(dir))
	if err != nil {
		t.Fatal(err)
	}
	names, bodies := untar(t, buf.Bytes())
	wantNames := []string{ManifestName, "data/gardend.db", "data/future/unknown.bin", "data/images/0123.png",
		"data/pointclouds/p1/g1.ply", "data/pointclouds/p1/g2.ply", "data/pointclouds/p2/deep.ply"}
	if !slices.Equal(names, wantNames) {
		t.Fatalf("entries\n%q\nwant\n%q", names, wantNames)
	}
	if !bytes.Equal(bodies["data/gardend.db"], testDB) {
		t.Fatal("the database entry is not the snapshot")
	}
	for rel, body := range want {
		if !bytes.Equal(bodies[DataPrefix+rel], body) {
			t.Errorf("%s differs", rel)
		}
	}
	m := res.Manifest
	if m.Database != "gardend.db" || m.SchemaVersion != 1 || !m.Created.Equal(testCreated) || len(m.Entries) != 6 {
		t.Fatalf("manifest %+v", m)
	}
	if len(m.Skipped) != 1 || m.Skipped[0].Path != "images/link.png" || len(res.Warnings) != 1 {
		t.Fatalf("skipped %+v, warnings %q", m.Skipped, res.Warnings)
	}
	got, err := Verify(bytes.NewReader(buf.Bytes()), ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Entries, m.Entries) {
		t.Fatal("Verify's manifest differs from Write's")
	}
	// The spool is gone, and so is the crashed backup's one (this Writer owns the dir).
	if matches, _ := filepath.Glob(filepath.Join(dir, spoolPrefix+"*")); len(matches) != 0 {
		t.Fatalf("spool left behind: %v", matches)
	}
}

func TestWriteRecordsFilesDeletedBeforeTheyArePinned(t *testing.T) {
	dir, _ := dataDir(t)
	bw := NewWriter()
	bw.hook = func(step string) {
		if step == "listed" {
			os.Remove(filepath.Join(dir, "images", "0123.png"))
		}
	}
	var buf bytes.Buffer
	res, err := bw.Write(context.Background(), &buf, source(dir))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Manifest.Missing) != 1 || res.Manifest.Missing[0].Path != "images/0123.png" {
		t.Fatalf("missing %+v", res.Manifest.Missing)
	}
	if _, err := Verify(&buf, ReadOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestWriteKeepsAFileDeletedAfterItWasPinned(t *testing.T) {
	dir, want := dataDir(t)
	bw := NewWriter()
	bw.hook = func(step string) {
		if step == "pinned" {
			os.Remove(filepath.Join(dir, "pointclouds", "p1", "g1.ply"))
		}
	}
	var buf bytes.Buffer
	if _, err := bw.Write(context.Background(), &buf, source(dir)); err != nil {
		t.Fatal(err)
	}
	_, bodies := untar(t, buf.Bytes())
	if !bytes.Equal(bodies["data/pointclouds/p1/g1.ply"], want["pointclouds/p1/g1.ply"]) {
		t.Fatal("a pinned file deleted before the copy was lost")
	}
}

func TestWriteFailsOnAFileRewrittenInPlace(t *testing.T) {
	dir, _ := dataDir(t)
	bw := NewWriter()
	bw.hook = func(step string) {
		if step == "pinned" {
			// Same inode as the pin, so the pin sees the change.
			f, err := os.OpenFile(filepath.Join(dir, "images", "0123.png"), os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteAt([]byte("PNG"), 0)
			f.Close()
		}
	}
	_, err := bw.Write(context.Background(), io.Discard, source(dir))
	if !errors.Is(err, ErrChanged) || !strings.Contains(err.Error(), "images/0123.png") {
		t.Fatalf("got %v, want ErrChanged naming the file", err)
	}
}

func TestWriteStopsWhenTheContextEnds(t *testing.T) {
	dir, _ := dataDir(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewWriter().Write(ctx, io.Discard, source(dir)); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, spoolPrefix+"*")); len(matches) != 0 {
		t.Fatalf("spool left behind: %v", matches)
	}
}

func TestWriteFailsWhenTheSnapshotFails(t *testing.T) {
	dir, _ := dataDir(t)
	src := source(dir)
	boom := errors.New("disk on fire")
	src.Snapshot = func(io.Writer) (int64, error) { return 0, boom }
	if _, err := NewWriter().Write(context.Background(), io.Discard, src); !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
}

// A file the snapshot may refer to but that is deleted while the snapshot is taken is
// reported missing, and a file created meanwhile is taken.
func TestWriteListsBeforeAndAfterTheSnapshot(t *testing.T) {
	dir, _ := dataDir(t)
	src := source(dir)
	snap := src.Snapshot
	src.Snapshot = func(w io.Writer) (int64, error) {
		os.Remove(filepath.Join(dir, "pointclouds", "p1", "g2.ply"))
		os.WriteFile(filepath.Join(dir, "images", "new.png"), []byte("new"), 0o600)
		return snap(w)
	}
	res, err := NewWriter().Write(context.Background(), io.Discard, src)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Manifest.Missing) != 1 || res.Manifest.Missing[0].Path != "pointclouds/p1/g2.ply" {
		t.Fatalf("missing %+v", res.Manifest.Missing)
	}
	if !slices.ContainsFunc(res.Manifest.Entries, func(e Entry) bool { return e.Path == "images/new.png" }) {
		t.Fatal("a file created during the snapshot is not in the archive")
	}
}

package backup_test

import (
	"archive/tar"
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

func validEntries() []backuptest.Entry {
	return []backuptest.Entry{
		{Path: "gardend.db", Body: []byte("database bytes")},
		{Path: "images/a.png", Body: []byte("image bytes")},
		{Path: "pointclouds/p/g.ply", Body: bytes.Repeat([]byte{7}, 3000)},
	}
}

func TestVerifyAcceptsAValidArchive(t *testing.T) {
	m, err := backup.Verify(bytes.NewReader(backuptest.Archive(validEntries(), nil)), backup.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Entries) != 3 || m.TotalBytes() != 14+11+3000 {
		t.Fatalf("manifest %+v", m)
	}
}

func TestVerifyRejects(t *testing.T) {
	valid := backuptest.Archive(validEntries(), nil)
	withEntries := func(edit func([]backuptest.Entry) []backuptest.Entry) []byte {
		return backuptest.Archive(edit(validEntries()), nil)
	}
	withManifest := func(edit func(*backup.Manifest)) []byte {
		return backuptest.Archive(validEntries(), edit)
	}
	flipped := bytes.Clone(valid)
	// The image's body is the second data block after the manifest's; find it by content.
	i := bytes.Index(flipped, []byte("image bytes"))
	flipped[i] ^= 0x20

	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, backup.ErrFormat},
		{"not tar", []byte("hello, this is not an archive"), backup.ErrFormat},
		{"flipped byte in a file", flipped, backup.ErrChecksum},
		{"truncated in the manifest", valid[:700], backup.ErrFormat},
		{"truncated in a file", valid[:i+3], backup.ErrFormat},
		{"truncated between entries", valid[:bytes.Index(valid, []byte("image bytes"))-512], backup.ErrFormat},
		{"control: a no-op header edit", withEntries(func(es []backuptest.Entry) []backuptest.Entry {
			es[0].Header = func(h *tar.Header) {}
			return es
		}), nil},
		{"path traversal in the manifest", withManifest(func(m *backup.Manifest) { m.Entries[1].Path = "../escape.png" }), backup.ErrUnsafePath},
		{"absolute path", withManifest(func(m *backup.Manifest) { m.Entries[1].Path = "/etc/passwd" }), backup.ErrUnsafePath},
		{"dot-dot inside", withManifest(func(m *backup.Manifest) { m.Entries[1].Path = "images/../../x" }), backup.ErrUnsafePath},
		{"backslash", withManifest(func(m *backup.Manifest) { m.Entries[1].Path = `images\..\..\x` }), backup.ErrUnsafePath},
		{"reserved name", withManifest(func(m *backup.Manifest) { m.Entries[1].Path = ".restore-old-1/x" }), backup.ErrUnsafePath},
		{"tar name escapes while the manifest looks fine", withEntries(func(es []backuptest.Entry) []backuptest.Entry {
			es[1].Header = func(h *tar.Header) { h.Name = "data/../../escape.png" }
			return es
		}), backup.ErrFormat},
		{"symlink entry", withEntries(func(es []backuptest.Entry) []backuptest.Entry {
			es[1].Header = func(h *tar.Header) { h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, "/etc/passwd", 0 }
			return es
		}), backup.ErrUnsafePath},
		{"device entry", withEntries(func(es []backuptest.Entry) []backuptest.Entry {
			es[1].Header = func(h *tar.Header) { h.Typeflag, h.Size, h.Devmajor = tar.TypeChar, 0, 1 }
			return es
		}), backup.ErrUnsafePath},
		{"directory entry", withEntries(func(es []backuptest.Entry) []backuptest.Entry {
			es[1].Header = func(h *tar.Header) { h.Typeflag, h.Size, h.Name = tar.TypeDir, 0, "data/images/" }
			return es
		}), backup.ErrUnsafePath},
		{"entries out of order", withManifest(func(m *backup.Manifest) { m.Entries[1], m.Entries[2] = m.Entries[2], m.Entries[1] }), backup.ErrFormat},
		{"entry missing from the archive", withManifest(func(m *backup.Manifest) {
			m.Entries = append(m.Entries, backup.Entry{Path: "images/b.png", Size: 1, SHA256: strings.Repeat("0", 64)})
		}), backup.ErrFormat},
		{"size differs from the manifest", withManifest(func(m *backup.Manifest) { m.Entries[1].Size++ }), backup.ErrFormat},
		{"listed twice", withManifest(func(m *backup.Manifest) { m.Entries[2].Path = m.Entries[1].Path }), backup.ErrFormat},
		{"bad checksum syntax", withManifest(func(m *backup.Manifest) { m.Entries[1].SHA256 = "xyz" }), backup.ErrFormat},
		{"no database entry", withManifest(func(m *backup.Manifest) { m.Database = "other.db" }), backup.ErrFormat},
		{"newer format", withManifest(func(m *backup.Manifest) { m.FormatVersion = backup.FormatVersion + 1 }), backup.ErrNewer},
		{"other format", withManifest(func(m *backup.Manifest) { m.Format = "zip" }), backup.ErrFormat},
		{"declared sizes beyond the limit", withManifest(func(m *backup.Manifest) { m.Entries[2].Size = backup.DefaultMaxTotal }), backup.ErrTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := backup.Verify(bytes.NewReader(tc.data), backup.ReadOptions{})
			if tc.want == nil {
				if err != nil {
					t.Fatalf("control case failed: %v", err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestVerifyRejectsAManifestThatIsNotFirst(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "data/gardend.db", Size: 1, Mode: 0o600})
	tw.Write([]byte("x"))
	tw.Close()
	if _, err := backup.Verify(&buf, backup.ReadOptions{}); !errors.Is(err, backup.ErrFormat) || !strings.Contains(err.Error(), "first entry") {
		t.Fatalf("got %v", err)
	}
}

func TestVerifyHonoursMaxTotal(t *testing.T) {
	data := backuptest.Archive(validEntries(), nil)
	if _, err := backup.Verify(bytes.NewReader(data), backup.ReadOptions{MaxTotal: 1000}); !errors.Is(err, backup.ErrTooLarge) {
		t.Fatalf("got %v", err)
	}
}

func TestCheckPath(t *testing.T) {
	for _, p := range []string{"gardend.db", "images/0a.png", "pointclouds/project one/geometry-7.ply", "a/b/c/d"} {
		if err := backup.CheckPath(p); err != nil {
			t.Errorf("%q: %v", p, err)
		}
	}
	for _, p := range []string{"", ".", "..", "/a", "a/", "a//b", "./a", "a/./b", "a/../b", `a\b`, "c:x", "a\x00b", "a\nb", ".restore-new-1", strings.Repeat("a", 1025), "\xff"} {
		if err := backup.CheckPath(p); !errors.Is(err, backup.ErrUnsafePath) {
			t.Errorf("%q accepted", p)
		}
	}
}

// listDir returns every path under dir, for before/after comparisons.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, rel)
		return nil
	})
	slices.Sort(out)
	return out
}

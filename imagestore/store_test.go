package imagestore

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// mustOpen opens a Store on "<tmp>/images" and fails the test on error.
func mustOpen(t testing.TB) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "images"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// dirNames lists the directory's file names, sorted.
func dirNames(t testing.TB, s *Store) []string {
	t.Helper()
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestOpen(t *testing.T) {
	data := t.TempDir()
	s, err := Open(filepath.Join(data, "a", "images"))
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(data, "a", "images"))
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o700 {
		t.Errorf("mode %v, want 0700", perm)
	}
	// Reopening an existing directory works.
	if _, err := Open(filepath.Join(data, "a", "images")); err != nil {
		t.Fatal(err)
	}
	if s.prefix != "images" {
		t.Errorf("prefix %q", s.prefix)
	}

	if _, err := Open("/"); err == nil {
		t.Error("Open(/) succeeded: image paths would have no prefix")
	}
	file := filepath.Join(data, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(file); err == nil {
		t.Error("Open on a regular file succeeded")
	}
}

// TestRoundTrip takes a PNG fixture through every step an upload and a download take
// and expects the same bytes and the same data URL back.
func TestRoundTrip(t *testing.T) {
	s := mustOpen(t)
	want := readFixture(t, fixturePNG)
	for _, in := range []string{
		DataURLPrefix + base64.StdEncoding.EncodeToString(want),
		DataURLPrefix + base64.RawStdEncoding.EncodeToString(want),
	} {
		b, err := DecodeDataURL(in)
		if err != nil {
			t.Fatal(err)
		}
		if w, h, err := CheckPNG(b); err != nil || w != fixtureW || h != fixtureH {
			t.Fatalf("CheckPNG = %d, %d, %v", w, h, err)
		}
		rel, err := s.Put(b)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(rel, "images/") || !strings.HasSuffix(rel, ".png") || len(rel) != len("images/")+32+4 {
			t.Errorf("rel = %q, want images/<32 hex>.png", rel)
		}
		r, size, err := s.Open(rel)
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		err = WriteDataURL(&out, r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		if size != int64(len(want)) || EncodedLen(size) != int64(out.Len()) {
			t.Errorf("size %d, encoded %d; want %d, %d", size, out.Len(), len(want), EncodedLen(int64(len(want))))
		}
		if got := out.String(); got != DataURLPrefix+base64.StdEncoding.EncodeToString(want) {
			t.Error("download is not the padded data URL of the upload")
		}
		again, err := DecodeDataURL(out.String())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, want) {
			t.Error("bytes changed on the round trip")
		}
	}
}

func TestPutLeavesOnlyTheImage(t *testing.T) {
	s := mustOpen(t)
	var wg sync.WaitGroup
	rels := make([]string, 8)
	for i := range rels {
		wg.Go(func() {
			rel, err := s.Put([]byte{byte(i)})
			if err != nil {
				t.Error(err)
			}
			rels[i] = rel
		})
	}
	wg.Wait()
	var want []string
	for _, rel := range rels {
		want = append(want, strings.TrimPrefix(rel, "images/"))
	}
	slices.Sort(want)
	if got := dirNames(t, s); !slices.Equal(got, want) {
		t.Errorf("directory holds %q, want %q", got, want)
	}
	for i, rel := range rels {
		b, err := os.ReadFile(filepath.Join(s.dir, strings.TrimPrefix(rel, "images/")))
		if err != nil || !bytes.Equal(b, []byte{byte(i)}) {
			t.Errorf("%s: %v %v", rel, b, err)
		}
	}
}

// TestPutFault checks that a failure at any step leaves neither a new image nor a
// temporary file, and that existing images stay.
func TestPutFault(t *testing.T) {
	errFault := errors.New("injected")
	for _, step := range []string{StepWritten, StepRenamed} {
		t.Run(step, func(t *testing.T) {
			s := mustOpen(t)
			old, err := s.Put([]byte("old"))
			if err != nil {
				t.Fatal(err)
			}
			before := dirNames(t, s)
			var seen []string
			s.SetFaultHook(func(got string) error {
				seen = append(seen, got)
				if got == step {
					return errFault
				}
				return nil
			})
			rel, err := s.Put([]byte("new"))
			if !errors.Is(err, errFault) || rel != "" {
				t.Fatalf("Put = %q, %v; want the injected error", rel, err)
			}
			if got := dirNames(t, s); !slices.Equal(got, before) {
				t.Errorf("directory holds %q, want %q", got, before)
			}
			r, _, err := s.Open(old)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(r)
			r.Close()
			if string(b) != "old" {
				t.Errorf("old image reads %q", b)
			}
			if seen[len(seen)-1] != step {
				t.Errorf("steps %q", seen)
			}

			s.SetFaultHook(nil)
			if _, err := s.Put([]byte("new")); err != nil {
				t.Errorf("Put after removing the hook: %v", err)
			}
		})
	}
}

func TestRemove(t *testing.T) {
	s := mustOpen(t)
	rel, err := s.Put([]byte("x"))
	if err != nil {
		t.Fatal(err)
	}

	errFault := errors.New("injected")
	s.SetFaultHook(func(step string) error {
		if step == StepRemove {
			return errFault
		}
		return nil
	})
	if err := s.Remove(rel); !errors.Is(err, errFault) {
		t.Fatalf("Remove with fault: %v", err)
	}
	if len(dirNames(t, s)) != 1 {
		t.Error("a failed Remove deleted the file")
	}
	s.SetFaultHook(nil)

	for range 2 { // the second time the file is already gone
		if err := s.Remove(rel); err != nil {
			t.Fatal(err)
		}
	}
	if names := dirNames(t, s); len(names) != 0 {
		t.Errorf("left %q", names)
	}
	if _, _, err := s.Open(rel); !errors.Is(err, ErrNotFound) {
		t.Errorf("Open after Remove: %v, want ErrNotFound", err)
	}
}

// TestBadPaths tries paths that are not this store's, escapes included; none may
// reach the file system.
func TestBadPaths(t *testing.T) {
	s := mustOpen(t)
	rel, err := s.Put([]byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(rel, "images/")
	// A file beside the directory that an escape would reach.
	outside := filepath.Join(filepath.Dir(s.dir), name)
	if err := os.WriteFile(outside, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, bad := range []string{
		"",
		name,                       // missing prefix
		"/" + rel,                  // absolute
		s.dir + "/" + name,         // absolute file-system path
		"images/../" + name,        // escape to the data directory
		"images/../images/" + name, // escape and come back
		"images//" + name,
		"images/./" + name,
		"images\\" + name,
		"other/" + name,
		"Images/" + name,
		"images/" + strings.ToUpper(name[:32]) + ".png",
		"images/" + name[:31] + ".png",
		"images/" + name[:32] + "0.png",
		"images/" + name[:32] + ".PNG",
		"images/" + name[:32] + ".png/",
		"images/" + name[:31] + "g.png",
		"images/.tmp-123",
		"images/" + name + "\x00",
		"images/..",
		"images/",
	} {
		if _, _, err := s.Open(bad); !errors.Is(err, ErrBadPath) {
			t.Errorf("Open(%q): %v, want ErrBadPath", bad, err)
		}
		if err := s.Remove(bad); !errors.Is(err, ErrBadPath) {
			t.Errorf("Remove(%q): %v, want ErrBadPath", bad, err)
		}
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("file outside the store: %v", err)
	}
	if _, _, err := s.Open("images/" + strings.Repeat("0", 32) + ".png"); !errors.Is(err, ErrNotFound) {
		t.Errorf("well-formed unknown path: %v, want ErrNotFound", err)
	}
	if len(dirNames(t, s)) != 1 {
		t.Error("the store's image was removed")
	}
}

func TestOpenNotRegular(t *testing.T) {
	s := mustOpen(t)
	name := strings.Repeat("ab", 16) + ".png"
	if err := os.Mkdir(filepath.Join(s.dir, name), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Open("images/" + name); err == nil {
		t.Error("Open of a directory succeeded")
	}
}

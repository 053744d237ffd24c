package imagestore

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSweep(t *testing.T) {
	s := mustOpen(t)
	var kept, orphans []string
	for i := range 4 {
		rel, err := s.Put([]byte{byte(i)})
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			kept = append(kept, rel)
		} else {
			orphans = append(orphans, rel)
		}
	}
	// What a crash between CreateTemp and rename leaves.
	tmp, err := os.CreateTemp(s.dir, tempPrefix+"*")
	if err != nil {
		t.Fatal(err)
	}
	tmp.Close()
	tmpRel := "images/" + filepath.Base(tmp.Name())
	// Not ours: left alone.
	foreign := []string{"README", "notes.png", strings.Repeat("a", 32) + ".jpg"}
	for _, name := range foreign {
		if err := os.WriteFile(filepath.Join(s.dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(s.dir, ".tmp-dir"), 0o700); err != nil {
		t.Fatal(err)
	}

	removed, err := s.Sweep(func(rel string) bool { return slices.Contains(kept, rel) })
	if err != nil {
		t.Fatal(err)
	}
	want := append(slices.Clone(orphans), tmpRel)
	slices.Sort(want)
	slices.Sort(removed)
	if !slices.Equal(removed, want) {
		t.Errorf("removed %q, want %q", removed, want)
	}
	var left []string
	for _, rel := range kept {
		left = append(left, strings.TrimPrefix(rel, "images/"))
	}
	left = append(left, foreign...)
	left = append(left, ".tmp-dir")
	slices.Sort(left)
	if got := dirNames(t, s); !slices.Equal(got, left) {
		t.Errorf("directory holds %q, want %q", got, left)
	}

	// Nothing left to do the second time.
	removed, err = s.Sweep(func(string) bool { return true })
	if err != nil || len(removed) != 0 {
		t.Errorf("second Sweep: %q, %v", removed, err)
	}
}

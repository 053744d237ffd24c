package pointcloud

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"github.com/gardend/gardend/store"
)

// TestFilesKeepAndOpen: a cloud written is opened and centred from its file; a cloud
// not kept is ErrNotKept (an fs.ErrNotExist), a uuid that cannot name a file is
// invalid input, and removing the project removes its clouds.
func TestFilesKeepAndOpen(t *testing.T) {
	f := NewFiles(t.TempDir(), 0, zerolog.Nop())
	path, err := f.Path(project, cloudA)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.write(path, xyzCloud([3]float32{1, 2, 3}, [3]float32{3, 4, 5})); err != nil {
		t.Fatal(err)
	}
	file, st, err := f.Open(project, cloudA)
	if err != nil {
		t.Fatal(err)
	}
	file.Close()
	if info, _ := os.Stat(path); st.Size() != info.Size() || st.Size() == 0 {
		t.Errorf("size %d, file %d", st.Size(), info.Size())
	}
	if mean, ok := f.Centre(project, cloudA); !ok || mean != [3]float64{2, 3, 4} {
		t.Errorf("centre %v, %v", mean, ok)
	}
	if _, _, err := f.Open(project, cloudB); !errors.Is(err, ErrNotKept) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a cloud not kept: %v", err)
	}
	for _, bad := range []string{"../x", "", "a/b"} {
		if _, _, err := f.Open(project, bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("cloud %q: %v", bad, err)
		}
	}
	if err := f.RemoveProject(project); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(path)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("project directory after RemoveProject: %v", err)
	}
}

//go:build unix

package plantmap_test

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/gardend/gardend/server/plantmap/plantmaptest"
)

// TestMediaFIFO: a FIFO in an image's place is refused at once; before, opening it
// waited for a writer for ever.
func TestMediaFIFO(t *testing.T) {
	media := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(media, plantmaptest.GeneratedImageFile), 0o600); err != nil {
		t.Fatal(err)
	}
	res, _ := importWithin(t, media, true)
	refused(t, res, "a FIFO")
}

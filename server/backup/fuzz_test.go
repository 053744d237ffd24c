package backup_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gardend/gardend/server/backup"
	"github.com/gardend/gardend/server/backup/backuptest"
)

// FuzzVerifyArchive feeds arbitrary bytes to the verifier Restore uses. It must never
// panic, never accept more entry bytes than the input holds (no sparse or size
// tricks), and every path it accepts must stay inside the directory it is joined to.
// (Restore itself syncs every file, too slow to run per input; the unit tests run it
// on the crafted bad archives.)
func FuzzVerifyArchive(f *testing.F) {
	f.Add(backuptest.Archive(validEntries(), nil))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := backup.Verify(bytes.NewReader(data), backup.ReadOptions{MaxTotal: 1 << 20})
		if err != nil {
			return
		}
		if m.TotalBytes() > int64(len(data)) {
			t.Fatalf("accepted %d bytes of entries from %d bytes of input", m.TotalBytes(), len(data))
		}
		root := filepath.Join(string(filepath.Separator)+"data", "dir")
		for _, e := range m.Entries {
			p := filepath.Join(root, filepath.FromSlash(e.Path))
			if !strings.HasPrefix(p, root+string(filepath.Separator)) || strings.HasPrefix(e.Path, ".restore-") {
				t.Fatalf("accepted path %q lands at %s", e.Path, p)
			}
		}
	})
}

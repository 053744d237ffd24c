package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gardend/gardend/store/bolt"
)

// TestErrorsNameTheProblem pins the messages of mistakes a newcomer makes: each says
// what is wrong once, and where to look.
func TestErrorsNameTheProblem(t *testing.T) {
	t.Run("data directory is a file", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "not-a-dir")
		if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := run(t, "", "inspect", "users", "--data", file)
		if err == nil || strings.Contains(err.Error(), "no gardend database") || !strings.Contains(err.Error(), "cannot read") ||
			!strings.Contains(err.Error(), "not a directory") {
			t.Fatalf("inspect --data FILE: %v", err)
		}
	})
	t.Run("database path names it once", func(t *testing.T) {
		dir := t.TempDir()
		db := filepath.Join(dir, bolt.FileName)
		if err := os.Mkdir(db, 0o700); err != nil {
			t.Fatal(err)
		}
		_, err := run(t, "", "inspect", "users", "--data", dir)
		if err == nil || strings.Count(err.Error(), db) != 1 || !strings.Contains(err.Error(), "is a directory") {
			t.Fatalf("database that cannot be opened: %v", err)
		}
	})
	t.Run("unknown flag points at help", func(t *testing.T) {
		_, err := run(t, "", "serve", "--adress", ":80")
		if err == nil || !strings.Contains(err.Error(), "unknown flag: --adress") ||
			!strings.Contains(err.Error(), "Run 'gardend serve --help' for usage.") {
			t.Fatalf("unknown flag: %v", err)
		}
	})
}

package pointcloud

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestPLYBudgetEvictsLeastRecentlyUsed: over the budget, the files used longest ago
// go first, down to 90% of it; temporary files (writes in progress) are never
// evicted, and a file read recently (touched) outlives older ones.
func TestBudgetEvictsLeastRecentlyUsed(t *testing.T) {
	dir := t.TempDir()
	base := time.Now().Add(-time.Hour)
	write := func(rel string, size int, age int) string {
		t.Helper()
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, make([]byte, size), 0o600); err != nil {
			t.Fatal(err)
		}
		at := base.Add(time.Duration(age) * time.Minute)
		os.Chtimes(p, at, at)
		return p
	}
	oldest := write("p1/a.ply", 300, 0)
	touched := write("p1/b.ply", 300, 1)
	middle := write("p2/c.ply", 300, 2)
	temp := write("p2/"+tempPrefix+"x.ply", 100, 0)
	b := newBudget(dir, 1000, zerolog.Nop())
	b.enforce() // 1000 bytes: within the budget
	for _, p := range []string{oldest, touched, middle, temp} {
		if !exists(p) {
			t.Fatalf("%s evicted within the budget", p)
		}
	}
	b.touch(touched)
	newest := write("p3/d.ply", 300, 30)
	b.added(300) // 1300 bytes: down to 900 or less
	for p, want := range map[string]bool{oldest: false, middle: false, touched: true, newest: true, temp: true} {
		if exists(p) != want {
			t.Errorf("%s exists: %v, want %v", filepath.Base(p), exists(p), want)
		}
	}
	if b.Used() != 700 {
		t.Errorf("used %d, want 700", b.Used())
	}
	if newBudget(dir, 0, zerolog.Nop()) != nil {
		t.Error("a zero budget is a limit")
	}
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

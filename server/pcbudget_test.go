package server_test

import (
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/server/pointcloud"
	"github.com/gardend/gardend/spatial/demo"
)

// plyFiles counts the PLY files under a data directory's pointclouds/ and their bytes.
func plyFiles(t *testing.T, dataDir string) (n int, bytes int64) {
	t.Helper()
	filepath.WalkDir(filepath.Join(dataDir, pointcloud.DirName), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			info, _ := d.Info()
			n++
			bytes += info.Size()
		}
		return nil
	})
	return n, bytes
}

// TestPointCloudBudget: with --pointcloud-max-bytes the kept clouds stay within it,
// the least recently used deleted, and every plant keeps its position.
func TestPointCloudBudget(t *testing.T) {
	const budget = 200 << 10
	ss := newSpatialSetup(t, demo.Options{Seed: 3, Beds: 2, Plants: 12}, demo.ServerOptions{}, func(c *server.Config) {
		c.Clouds.MaxBytes = budget
	})
	ss.g.streamBeds(ss.garden, ss.token)
	ss.g.waitClouds()
	n, bytes := plyFiles(t, ss.g.cfg.DataDir)
	positions := 0
	for _, b := range ss.ds.Beds {
		for _, p := range b.Plants {
			if p.HasPosition {
				positions++
			}
		}
	}
	t.Logf("%d files, %d bytes, %d positions", n, bytes, positions)
	if bytes > budget || n == 0 || n >= positions {
		t.Fatalf("%d PLY files of %d bytes kept for %d positions; budget %d", n, bytes, positions, budget)
	}
	ss.checkBedLines(t, ss.g.streamBeds(ss.garden, ss.token), true)
}

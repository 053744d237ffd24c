package pointcloud

import (
	"cmp"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// budget keeps the PLY files under pointclouds/ within a size: when a new file takes
// them over it, the least recently used files are deleted until they are at 90% of it
// (so the next few downloads do not each cost a scan). A file's modification time is
// its last use: written, or read to recompute a position. Deleting a file never loses
// a position; it only means a download if the position must be recomputed.
type budget struct {
	dir string
	max int64 // bytes; 0 means no limit
	log zerolog.Logger

	mu sync.Mutex
	// used is an upper estimate: exact after a scan, plus what was written since
	// (files deleted with their projects are only noticed by the next scan).
	used    int64
	scanned bool
}

func newBudget(dir string, max int64, log zerolog.Logger) *budget {
	if max <= 0 {
		return nil
	}
	return &budget{dir: dir, max: max, log: log}
}

// touch marks path as just used, so it is evicted last. The wall clock, not the
// server's: the file system stamps written files with it.
func (b *budget) touch(path string) {
	if b == nil {
		return
	}
	now := time.Now()
	_ = os.Chtimes(path, now, now) // best effort: a missed touch only ages the file
}

// added accounts a file of size bytes just written, and evicts when over budget.
func (b *budget) added(size int64) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used += size
	if !b.scanned || b.used > b.max {
		b.enforceLocked()
	}
}

// enforce scans the directory and evicts when over budget (at start-up).
func (b *budget) enforce() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.enforceLocked()
}

type keptFile struct {
	path string
	size int64
	used time.Time
}

func (b *budget) enforceLocked() {
	var files []keptFile
	var total int64
	err := filepath.WalkDir(b.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // deleted under the walk, or no clouds yet
			}
			return err
		}
		// Temporary files are writes in progress: counted, never evicted.
		if d.IsDir() || !strings.HasSuffix(d.Name(), ".ply") {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil // deleted under the walk
		}
		total += info.Size()
		if !strings.HasPrefix(d.Name(), tempPrefix) {
			files = append(files, keptFile{path: path, size: info.Size(), used: info.ModTime()})
		}
		return nil
	})
	if err != nil {
		b.log.Error().Err(err).Str("dir", b.dir).Msg("measure point-cloud files")
		return
	}
	b.used, b.scanned = total, true
	if total <= b.max {
		return
	}
	target := b.max / 10 * 9
	slices.SortFunc(files, func(x, y keptFile) int { return cmp.Or(x.used.Compare(y.used), strings.Compare(x.path, y.path)) })
	evicted, freed := 0, int64(0)
	for _, f := range files {
		if total <= target {
			break
		}
		if err := os.Remove(f.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			b.log.Error().Err(err).Str("path", f.path).Msg("evict point cloud")
			continue
		}
		total -= f.size
		freed += f.size
		evicted++
	}
	b.used = total
	b.log.Info().Int("files", evicted).Int64("bytes", freed).Int64("used", total).Int64("max", b.max).
		Msg("point clouds over --pointcloud-max-bytes: evicted the least recently used files (positions stay)")
}

// Used is the estimate of the bytes under the directory (for metrics).
func (b *budget) Used() int64 {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

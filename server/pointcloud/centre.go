package pointcloud

import (
	"os"
	"sync"
	"time"

	"github.com/gardend/gardend/spatial/cloud"
)

// centreCache keeps the mean point of kept clouds, by file and its size and time, so a
// 3D scene reads each cloud once rather than on every request.
type centreCache struct {
	mu sync.Mutex
	m  map[string]centreEntry
}

type centreEntry struct {
	size    int64
	modTime time.Time
	mean    [3]float64
	ok      bool
}

const centreCacheMax = 8192

// Centre returns the mean of the kept cloud's finite points; ok is false when the
// cloud is not kept or has no such point.
func (f *Files) Centre(project, cloudUUID string) (mean [3]float64, ok bool) {
	path, err := f.Path(project, cloudUUID)
	if err != nil {
		return mean, false
	}
	st, err := os.Stat(path)
	if err != nil {
		return mean, false
	}
	c := &f.centres
	c.mu.Lock()
	e, hit := c.m[path]
	c.mu.Unlock()
	if hit && e.size == st.Size() && e.modTime.Equal(st.ModTime()) {
		return e.mean, e.ok
	}
	e = centreEntry{size: st.Size(), modTime: st.ModTime()}
	if pc, _, err := f.read(path); err == nil {
		e.mean, _, err = cloud.MeanXYZ(pc)
		e.ok = err == nil
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= centreCacheMax {
		c.m = map[string]centreEntry{}
	}
	c.m[path] = e
	c.mu.Unlock()
	return e.mean, e.ok
}

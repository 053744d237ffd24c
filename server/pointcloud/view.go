package pointcloud

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/gardend/gardend/spatial/cloud"
)

// What requests want of a kept cloud (its centre for the 3D scene, its finite points
// for a viewer) is read from its file a chunk at a time: a request costs a few tens of
// KiB whatever the cloud's size. One pass counts a file's finite points and finds
// their mean; the outcome is cached by file, size and time, so a scene reads each cloud
// once and a viewer's request streams the file once.

// statsCache keeps cloud.StatPLY of kept files.
type statsCache struct {
	mu sync.Mutex
	m  map[string]statsEntry
}

type statsEntry struct {
	size    int64
	modTime time.Time
	stats   cloud.PLYStats
	err     error
}

const statsCacheMax = 8192

// stats is cloud.StatPLY of the open file at path (st is its Stat), from the cache
// when it holds the file's size and time. It reads the file with ReadAt, so the
// file's offset stays where it was.
func (f *Files) stats(path string, file *os.File, st fs.FileInfo) (cloud.PLYStats, error) {
	c := &f.statCache
	c.mu.Lock()
	e, hit := c.m[path]
	c.mu.Unlock()
	if hit && e.size == st.Size() && e.modTime.Equal(st.ModTime()) {
		return e.stats, e.err
	}
	e = statsEntry{size: st.Size(), modTime: st.ModTime()}
	e.stats, e.err = cloud.StatPLY(io.NewSectionReader(file, 0, st.Size()))
	var pathErr *fs.PathError
	if errors.As(e.err, &pathErr) {
		return e.stats, e.err // the disk's, not the file's: not cached
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= statsCacheMax {
		c.m = map[string]statsEntry{}
	}
	c.m[path] = e
	c.mu.Unlock()
	return e.stats, e.err
}

// Centre returns the mean of the kept cloud's finite points; ok is false when the
// cloud is not kept or has no such point.
func (f *Files) Centre(project, cloudUUID string) (mean [3]float64, ok bool) {
	file, st, err := f.Open(project, cloudUUID)
	if err != nil {
		return mean, false
	}
	defer func() { _ = file.Close() }() // read only
	path, _ := f.Path(project, cloudUUID)
	s, err := f.stats(path, file, st)
	return s.Mean, err == nil && s.MeanOK
}

// View is a kept cloud as a viewer gets it: its points whose x, y and z are all
// finite (the PlantMap client drops a whole cloud with one NaN in it), as a
// little-endian PLY file of Size bytes. Read it from the start; it seeks only to its
// start and end (for http.ServeContent without ranges) unless Seekable. Close it when
// done.
type View struct {
	io.ReadSeeker
	Size    int64
	ModTime time.Time
	// Seekable: the view is the file itself (nothing to leave out), which serves
	// ranges too.
	Seekable bool
	file     *os.File
}

// Close closes the file.
func (v *View) Close() error { return v.file.Close() }

// OpenView opens a kept cloud as viewers get it: ErrNotKept when there is none,
// store.ErrInvalid when a uuid cannot name a file, cloud.ErrPLY (or cloud.ErrInvalid)
// when the file is no cloud with x, y and z.
func (f *Files) OpenView(project, cloudUUID string) (*View, error) {
	file, st, err := f.Open(project, cloudUUID)
	if err != nil {
		return nil, err
	}
	path, _ := f.Path(project, cloudUUID)
	s, err := f.stats(path, file, st)
	if err != nil {
		_ = file.Close() // read only
		return nil, err
	}
	v := &View{Size: st.Size(), ModTime: st.ModTime(), file: file}
	if s.Plain {
		v.ReadSeeker, v.Seekable = file, true
		return v, nil
	}
	rd, size, err := cloud.FinitePLY(file, s.Finite)
	if err != nil {
		_ = file.Close() // read only
		return nil, err
	}
	v.ReadSeeker, v.Size = &startEnd{r: rd, size: size}, size
	return v, nil
}

// startEnd is a stream that tells its size: it seeks to its start before the first
// read and to its end, nowhere else.
type startEnd struct {
	r    io.Reader
	size int64
	read bool
}

var errStreamSeek = errors.New("a filtered point cloud is sent whole: it seeks only to its start and end")

func (s *startEnd) Read(p []byte) (int, error) {
	s.read = true
	return s.r.Read(p)
}

func (s *startEnd) Seek(offset int64, whence int) (int64, error) {
	switch {
	case offset == 0 && whence == io.SeekEnd:
		return s.size, nil
	case offset == 0 && whence == io.SeekStart && !s.read:
		return 0, nil
	}
	return 0, errStreamSeek
}

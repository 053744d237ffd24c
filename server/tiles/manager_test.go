package tiles_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gardend/gardend/imagestore/pngtest"
	"github.com/gardend/gardend/server/tiles"
)

// dirSource serves the pictures of a directory as image paths "images/<name>": the
// store's records and content as files, the way a bbolt node keeps them.
type dirSource struct {
	dir   string
	fails atomic.Int32 // OpenImage fails this many more times
}

func (s *dirSource) ImagePaths() (map[string]bool, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, e := range entries {
		out["images/"+e.Name()] = true
	}
	return out, nil
}

var errUnavailable = errors.New("database unavailable")

func (s *dirSource) OpenImage(_ context.Context, p string) (io.ReadCloser, int64, error) {
	if s.fails.Add(-1) >= 0 {
		return nil, 0, errUnavailable
	}
	f, err := os.Open(filepath.Join(s.dir, filepath.Base(p)))
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st.Size(), nil
}

// picture adds a picture to src and returns its image path.
func picture(t *testing.T, src *dirSource, n int, w, h int) string {
	t.Helper()
	name := fmt.Sprintf("%032x.png", n)
	b := pngtest.Encode(pngtest.Photo(w, h, uint64(n)), pngtest.Kind{ColorType: pngtest.True, Depth: 8}, pngtest.Options{})
	if err := os.WriteFile(filepath.Join(src.dir, name), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return "images/" + name
}

func newManager(t *testing.T, cfg tiles.Config) (*tiles.Manager, *dirSource, string) {
	t.Helper()
	src := &dirSource{dir: t.TempDir()}
	src.fails.Store(0)
	data := t.TempDir()
	m, err := tiles.New(data, cfg, src, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))
	if err != nil {
		t.Fatal(err)
	}
	return m, src, filepath.Join(data, tiles.DirName)
}

func run(t *testing.T, m *tiles.Manager) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func idle(t *testing.T, m *tiles.Manager) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
}

func state(t *testing.T, m *tiles.Manager, p string) tiles.Status {
	t.Helper()
	py, st, err := m.Get(p)
	if err != nil {
		t.Fatal(err)
	}
	if py != nil {
		py.Close()
	}
	return st
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// TestWantedFirst: pictures wanted now (an upload, a reader) are built before those
// queued at start-up, in the order wanted.
func TestWantedFirst(t *testing.T) {
	m, src, _ := newManager(t, tiles.Config{})
	var mu sync.Mutex
	var order []string
	m.SetHook(func(_ context.Context, p string, rows, total int) {
		if rows == total {
			mu.Lock()
			order = append(order, p)
			mu.Unlock()
		}
	})
	a, b, c := picture(t, src, 1, 20, 20), picture(t, src, 2, 20, 20), picture(t, src, 3, 20, 20)
	if err := m.QueueMissing(); err != nil {
		t.Fatal(err)
	}
	m.Want(c)
	run(t, m)
	idle(t, m)
	if want := []string{c, a, b}; !slices.Equal(order, want) {
		t.Fatalf("built %v, want %v", order, want)
	}
	if err := m.QueueMissing(); err != nil {
		t.Fatal(err)
	}
	if q, bl := m.Counts(); q+bl != 0 {
		t.Fatalf("built pictures queued again: %d, %d", q, bl)
	}
}

// TestBudgetEvictsLeastRecentlyServed: over the budget, the least recently served
// packs go and are marked, so that a start does not build them again; asking for one
// builds it again.
func TestBudgetEvictsLeastRecentlyServed(t *testing.T) {
	m, src, dir := newManager(t, tiles.Config{MaxBytes: 1})
	run(t, m)
	a := picture(t, src, 1, 300, 300)
	m.Want(a)
	idle(t, m)
	b := picture(t, src, 2, 300, 300)
	m.Want(b)
	idle(t, m)
	got := names(t, dir)
	if want := []string{fmt.Sprintf("%032x.evicted", 1), fmt.Sprintf("%032x.pyr", 2)}; !slices.Equal(got, want) {
		t.Fatalf("tiles/ holds %v, want %v", got, want)
	}
	if err := m.QueueMissing(); err != nil {
		t.Fatal(err)
	}
	if q, _ := m.Counts(); q != 0 {
		t.Fatal("an evicted pack is queued at start-up")
	}
	if st := state(t, m, a); st.State != tiles.Queued {
		t.Fatalf("asked for after its eviction: %+v", st)
	}
	idle(t, m)
	if st := state(t, m, a); st.State != tiles.Ready {
		t.Fatalf("after the rebuild: %+v", st)
	}
	if got := names(t, dir); !slices.Contains(got, fmt.Sprintf("%032x.pyr", 1)) || slices.Contains(got, fmt.Sprintf("%032x.evicted", 1)) {
		t.Fatalf("tiles/ holds %v", got)
	}
}

// TestPassingFailuresRetried: a build that fails for a passing reason is tried again
// after a backoff; after MaxAttempts the picture is reported failed until RetryAfter,
// when asking for it queues it again.
func TestPassingFailuresRetried(t *testing.T) {
	now := time.Now()
	var clock atomic.Int64
	m, src, _ := newManager(t, tiles.Config{Backoff: time.Millisecond, MaxAttempts: 3, RetryAfter: time.Hour,
		Now: func() time.Time { return now.Add(time.Duration(clock.Load())) }})
	p := picture(t, src, 1, 30, 30)
	src.fails.Store(2)
	run(t, m)
	m.Want(p)
	deadline := time.Now().Add(time.Minute)
	for state(t, m, p).State != tiles.Ready {
		if time.Now().After(deadline) {
			t.Fatalf("not built after two passing failures: %+v", state(t, m, p))
		}
		clock.Add(int64(time.Second)) // past any backoff
		time.Sleep(5 * time.Millisecond)
	}

	q := picture(t, src, 2, 30, 30)
	src.fails.Store(100)
	m.Want(q)
	for st := state(t, m, q); st.State != tiles.Failed; st = state(t, m, q) {
		if time.Now().After(deadline) {
			t.Fatalf("still %+v after failing every time", st)
		}
		clock.Add(int64(time.Second))
		time.Sleep(5 * time.Millisecond)
	}
	if st := state(t, m, q); !strings.Contains(st.Err, "failed repeatedly") {
		t.Fatalf("status %+v", st)
	}
	src.fails.Store(0)
	clock.Add(int64(2 * time.Hour))
	if st := state(t, m, q); st.State != tiles.Queued {
		t.Fatalf("after RetryAfter: %+v", st)
	}
	idle(t, m)
	if st := state(t, m, q); st.State != tiles.Ready {
		t.Fatalf("after the retry: %+v", st)
	}
}

// TestDamagedPackRebuilt: a pack that does not read (a disk's damage, another format)
// is deleted and built again when asked for.
func TestDamagedPackRebuilt(t *testing.T) {
	m, src, dir := newManager(t, tiles.Config{})
	run(t, m)
	p := picture(t, src, 1, 40, 40)
	m.Want(p)
	idle(t, m)
	pack := filepath.Join(dir, fmt.Sprintf("%032x.pyr", 1))
	if err := os.WriteFile(pack, []byte("not a pack"), 0o600); err != nil {
		t.Fatal(err)
	}
	if st := state(t, m, p); st.State != tiles.Queued {
		t.Fatalf("damaged pack: %+v", st)
	}
	idle(t, m)
	if st := state(t, m, p); st.State != tiles.Ready {
		t.Fatalf("after the rebuild: %+v", st)
	}
}

// TestForgetDuringBuild: forgetting a picture while it is being built stops the build
// and leaves no file.
func TestForgetDuringBuild(t *testing.T) {
	m, src, dir := newManager(t, tiles.Config{})
	p := picture(t, src, 1, 300, 600)
	reached, stopped := make(chan struct{}), make(chan struct{})
	m.SetHook(func(ctx context.Context, _ string, rows, _ int) {
		if rows == 256 {
			close(reached)
			<-ctx.Done()
			close(stopped)
		}
	})
	run(t, m)
	m.Want(p)
	<-reached
	m.Forget(p)
	<-stopped
	idle(t, m)
	if got := names(t, dir); len(got) != 0 {
		t.Fatalf("tiles/ holds %v", got)
	}
}

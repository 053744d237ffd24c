package tiles

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/gardend/gardend/imagestore/pyramid"
	"github.com/gardend/gardend/server/atomicfile"
	"github.com/gardend/gardend/store"
)

// DirName is the directory of the packs inside the data directory.
const DirName = "tiles"

const (
	packExt    = ".pyr"
	failedExt  = ".failed"
	evictedExt = ".evicted"
	tempPrefix = ".tmp-"
)

// Source is where the pictures come from: the store's image records and content.
type Source interface {
	ImagePaths() (map[string]bool, error)
	OpenImage(ctx context.Context, path string) (io.ReadCloser, int64, error)
}

// Config tunes a Manager; zero values take the defaults.
type Config struct {
	// MaxBytes bounds the packs kept (0: no limit); beyond it the least recently
	// served are deleted.
	MaxBytes int64
	// Workers is how many pictures are built at once (default 1): each takes a core
	// and up to ~2 KiB of memory per pixel of width.
	Workers int
	// MaxPixels: larger pictures are not tiled (uploads are refused before; an import
	// or a restore may bring one).
	MaxPixels int64
	// Backoff is the wait after a build failed for a passing reason, doubled after
	// each further failure; after MaxAttempts the picture waits for RetryAfter.
	Backoff     time.Duration
	MaxAttempts int
	RetryAfter  time.Duration
	Now         func() time.Time
}

// Defaults of Config.
const (
	DefaultBackoff     = 5 * time.Second
	DefaultMaxAttempts = 5
	DefaultRetryAfter  = 10 * time.Minute
)

func (c *Config) setDefaults() {
	if c.Workers <= 0 {
		c.Workers = 1
	}
	if c.Backoff <= 0 {
		c.Backoff = DefaultBackoff
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.RetryAfter <= 0 {
		c.RetryAfter = DefaultRetryAfter
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// State is where a picture's pyramid is.
type State string

// The states.
const (
	Ready    State = "ready"
	Queued   State = "queued"
	Building State = "building"
	Failed   State = "failed"
)

// Status is what Get reports of a pyramid not ready.
type Status struct {
	State State
	// Progress is the share of the picture's rows read, while building.
	Progress float64
	// Err says why it failed (or why the last attempt did, while queued again).
	Err string
}

// Manager keeps and builds the packs. Its methods are safe for concurrent use.
type Manager struct {
	dir string
	cfg Config
	src Source
	log zerolog.Logger

	mu      sync.Mutex
	jobs    map[string]*job // queued or building, by image path
	order   uint64          // enqueue counter
	changed chan struct{}   // closed and replaced whenever jobs change
	used    int64           // bytes of packs, once scanned
	running int             // builds in progress, forgotten ones included
	scanned bool
	hook    func(ctx context.Context, path string, rows, total int)
}

type job struct {
	path     string
	seq      uint64
	urgent   bool
	building bool
	cancel   context.CancelFunc
	progress float64
	attempts int
	due      time.Time
	gaveUp   bool
	lastErr  string
}

// New opens (creating it, mode 0700) dataDir's tiles/ directory.
func New(dataDir string, cfg Config, src Source, log zerolog.Logger) (*Manager, error) {
	cfg.setDefaults()
	dir := filepath.Join(dataDir, DirName)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("tiles directory: %w", err)
	}
	return &Manager{
		dir: dir, cfg: cfg, src: src, log: log.With().Str("component", "tiles").Logger(),
		jobs: map[string]*job{}, changed: make(chan struct{}),
	}, nil
}

// SetHook makes every build call fn with its progress (tests stop builds with it).
// Set it before Run.
func (m *Manager) SetHook(fn func(ctx context.Context, path string, rows, total int)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hook = fn
}

// packName is the base name of the files of the picture at image path p: its file
// name without ".png", which must be the 32 hex digits both stores give images.
func packName(p string) (string, bool) {
	name, ok := strings.CutSuffix(path.Base(p), ".png")
	if !ok || len(name) != 32 {
		return "", false
	}
	for _, c := range name {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", false
		}
	}
	return name, true
}

func (m *Manager) file(name, ext string) string { return filepath.Join(m.dir, name+ext) }

// notify wakes whoever waits for a change; m.mu held.
func (m *Manager) notify() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// Get opens the pyramid of the picture at p when it is ready. Otherwise it reports
// where it is, and queues its build when nothing else has (Want).
func (m *Manager) Get(p string) (*Pyramid, Status, error) {
	name, ok := packName(p)
	if !ok {
		return nil, Status{State: Failed, Err: "the picture's path cannot name a pyramid"}, nil
	}
	py, err := m.open(name)
	if err == nil {
		return py, Status{State: Ready}, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, Status{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if st, ok := m.jobStatus(p); ok {
		return nil, st, nil
	}
	if reason, err := os.ReadFile(m.file(name, failedExt)); err == nil {
		return nil, Status{State: Failed, Err: string(reason)}, nil
	}
	// The pack may have appeared since open looked.
	if _, err := os.Stat(m.file(name, packExt)); err == nil {
		py, err := m.open(name)
		return py, Status{State: Ready}, err
	}
	m.enqueue(p, true)
	return nil, Status{State: Queued}, nil
}

// jobStatus is the status of p's job, if it has one, which is now wanted first;
// m.mu held.
func (m *Manager) jobStatus(p string) (Status, bool) {
	j := m.jobs[p]
	switch {
	case j == nil:
		return Status{}, false
	case j.building:
		return Status{State: Building, Progress: j.progress}, true
	case j.gaveUp && m.cfg.Now().Sub(j.due) < m.cfg.RetryAfter:
		return Status{State: Failed, Err: j.lastErr}, true
	case j.gaveUp:
		j.gaveUp, j.attempts, j.urgent, j.due = false, 0, true, time.Time{}
		m.notify()
	case !j.urgent:
		j.urgent = true // somebody waits for it now
		m.notify()
	}
	return Status{State: Queued, Err: j.lastErr}, true
}

// Want queues the picture at p for building first, unless it is built, queued or
// known not to build (an upload's picture: wanted now).
func (m *Manager) Want(p string) {
	if py, _, err := m.Get(p); err == nil && py != nil {
		_ = py.Close() // read only
	}
}

// enqueue adds p's job unless it has one (then an urgent want moves it ahead); m.mu
// held.
func (m *Manager) enqueue(p string, urgent bool) {
	if j := m.jobs[p]; j != nil {
		if urgent && !j.urgent {
			j.urgent = true
			m.notify()
		}
		return
	}
	m.order++
	m.jobs[p] = &job{path: p, seq: m.order, urgent: urgent}
	m.notify()
}

// Forget stops building the picture at p and deletes its files: it was replaced or
// deleted. No pack of it appears afterwards.
func (m *Manager) Forget(p string) {
	name, ok := packName(p)
	if !ok {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if j := m.jobs[p]; j != nil {
		if j.cancel != nil {
			j.cancel()
		}
		delete(m.jobs, p)
		m.notify()
	}
	for _, ext := range []string{packExt, failedExt, evictedExt} {
		if err := os.Remove(m.file(name, ext)); err == nil && ext == packExt {
			m.scanned = false // measure again at the next build
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			m.log.Warn().Err(err).Str("image_path", p).Msg("remove a tile file; the next sweep deletes it")
		}
	}
}

// Run builds pictures until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for range m.cfg.Workers {
		wg.Go(func() { m.work(ctx) })
	}
	wg.Wait()
}

// QueueMissing queues the pictures of the store that have no pack, no failure and
// were not evicted, in path order, behind whatever is wanted: a node that keeps the
// pictures calls it at start-up, after the sweep.
func (m *Manager) QueueMissing() error {
	paths, err := m.src.ImagePaths()
	if err != nil {
		return err
	}
	sorted := slices.Sorted(func(yield func(string) bool) {
		for p := range paths {
			if !yield(p) {
				return
			}
		}
	})
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, p := range sorted {
		name, ok := packName(p)
		if !ok {
			continue
		}
		if exists(m.file(name, packExt)) || exists(m.file(name, failedExt)) || exists(m.file(name, evictedExt)) {
			continue
		}
		m.enqueue(p, false)
		n++
	}
	if n > 0 {
		m.log.Info().Int("pictures", n).Msg("pictures without tiles queued for building")
	}
	return nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// work builds the next due job until ctx ends.
func (m *Manager) work(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		j, wait, changed := m.next()
		if j != nil {
			m.run(ctx, j)
			continue
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-timer.C:
		}
	}
}

// next takes the job to build now (urgent ones first, then in queue order), or says
// how long to wait.
func (m *Manager) next() (*job, time.Duration, <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.cfg.Now()
	var best *job
	wait := time.Hour
	for _, j := range m.jobs {
		if j.building || j.gaveUp {
			continue
		}
		if d := j.due.Sub(now); d > 0 {
			wait = min(wait, d)
			continue
		}
		if best == nil || (j.urgent && !best.urgent) || (j.urgent == best.urgent && j.seq < best.seq) {
			best = j
		}
	}
	if best != nil {
		best.building = true
		m.notify()
	}
	return best, wait, m.changed
}

// errForgotten: the picture was forgotten while it was being built.
var errForgotten = errors.New("the picture was replaced or deleted")

// run builds j and records the outcome.
func (m *Manager) run(ctx context.Context, j *job) {
	jctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m.mu.Lock()
	if m.jobs[j.path] != j {
		m.mu.Unlock()
		return
	}
	j.cancel = cancel
	hook := m.hook
	m.running++
	m.mu.Unlock()
	start := time.Now()
	n, err := m.build(jctx, j, hook)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.running--
	if m.jobs[j.path] != j {
		m.notify()
		return // forgotten: nothing to record
	}
	j.building, j.cancel, j.progress = false, nil, 0
	defer m.notify()
	switch {
	case err == nil:
		delete(m.jobs, j.path)
		m.log.Info().Str("image_path", j.path).Int64("bytes", n).Dur("took", time.Since(start)).Msg("picture tiled")
	case errors.Is(err, pyramid.ErrPicture):
		delete(m.jobs, j.path)
		m.recordFailure(j.path, err)
	case errors.Is(err, store.ErrNotFound):
		delete(m.jobs, j.path) // the picture went meanwhile
	case ctx.Err() != nil:
		delete(m.jobs, j.path) // shutting down: a start queues it again, or a request
	default:
		j.attempts++
		j.lastErr = "building the tiles failed; they are tried again"
		if j.attempts >= m.cfg.MaxAttempts {
			j.gaveUp, j.due = true, m.cfg.Now()
			j.lastErr = "building the tiles failed repeatedly; they are tried again when asked for later"
		} else {
			j.due = m.cfg.Now().Add(m.cfg.Backoff << (j.attempts - 1))
		}
		m.log.Error().Err(err).Str("image_path", j.path).Int("attempts", j.attempts).Bool("gave_up", j.gaveUp).Msg("tile a picture")
	}
}

// recordFailure notes that the picture at p cannot be tiled; m.mu held.
func (m *Manager) recordFailure(p string, err error) {
	m.log.Warn().Err(err).Str("image_path", p).Msg("the picture cannot be tiled; readers get the whole picture")
	name, _ := packName(p)
	if werr := atomicfile.WriteFile(m.file(name, failedExt), []byte(err.Error()), atomicfile.Options{Pattern: tempPrefix + "*"}); werr != nil {
		m.log.Error().Err(werr).Str("image_path", p).Msg("record a failed tiling")
	}
}

// build makes the pack of j's picture and publishes it, unless j was forgotten.
func (m *Manager) build(ctx context.Context, j *job, hook func(context.Context, string, int, int)) (int64, error) {
	name, _ := packName(j.path)
	rc, size, err := m.src.OpenImage(ctx, j.path)
	if err != nil {
		return 0, err
	}
	defer func() { _ = rc.Close() }() // read only
	src, ok := rc.(io.ReaderAt)
	if !ok {
		// Content streamed from the database: the decoder reads interlaced pictures
		// once per pass, so it goes to a scratch file first.
		f, err := m.spool(ctx, rc)
		if err != nil {
			return 0, err
		}
		defer func() { _ = f.Close() }() // scratch
		src = f
	}
	out, err := atomicfile.Create(m.file(name, packExt), atomicfile.Options{Pattern: tempPrefix + "*" + packExt})
	if err != nil {
		return 0, err
	}
	defer out.Abort() // a no-op once committed
	opts := pyramid.Options{MaxPixels: m.cfg.MaxPixels, ScratchDir: m.dir, Progress: func(rows, total int) {
		m.mu.Lock()
		j.progress = float64(rows) / float64(total)
		m.mu.Unlock()
		if hook != nil {
			hook(ctx, j.path, rows, total)
		}
	}}
	_, n, err := pyramid.Build(ctx, src, size, out.File, opts)
	if err != nil {
		return 0, err
	}
	if err := out.Sync(); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.jobs[j.path] != j || ctx.Err() != nil {
		return 0, errors.Join(errForgotten, ctx.Err())
	}
	if err := out.Commit(); err != nil {
		return 0, err
	}
	_ = os.Remove(m.file(name, evictedExt)) // built again after an eviction
	m.accountLocked(n, name)
	return n, nil
}

// spool copies r into a scratch file of the directory, removed at once.
func (m *Manager) spool(ctx context.Context, r io.Reader) (*os.File, error) {
	f, err := os.CreateTemp(m.dir, tempPrefix+"spool-*")
	if err != nil {
		return nil, err
	}
	_ = os.Remove(f.Name()) // open, it lives until closed; a crash leaves it to the sweep
	if _, err := io.Copy(f, readerWithContext{ctx, r}); err != nil {
		_ = f.Close() // err is the one to report
		return nil, fmt.Errorf("read the picture: %w", err)
	}
	return f, nil
}

type readerWithContext struct {
	ctx context.Context
	r   io.Reader
}

func (r readerWithContext) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}

// WaitIdle waits until no build is queued or running (failed ones aside), and builds
// of forgotten pictures have cleaned up.
func (m *Manager) WaitIdle(ctx context.Context) error {
	for {
		m.mu.Lock()
		busy := m.running > 0
		for _, j := range m.jobs {
			busy = busy || !j.gaveUp
		}
		ch := m.changed
		m.mu.Unlock()
		if !busy {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

// Counts counts the queued and the building pictures (metrics).
func (m *Manager) Counts() (queued, building int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, j := range m.jobs {
		switch {
		case j.building:
			building++
		case !j.gaveUp:
			queued++
		}
	}
	return queued, building
}

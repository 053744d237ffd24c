package pointcloud

import (
	"context"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/cloud"
	"github.com/gardend/gardend/store"
)

// Store is what the pipeline needs of the database: the download queue and the
// positions of a project. Both backends satisfy it.
type Store interface {
	store.CloudQueue
	CloudState(project string) (store.CloudState, error)
}

// Source is what the pipeline needs of the spatial server (*spatial.Client).
type Source interface {
	PointCloud(ctx context.Context, project, cloudUUID string) (cloud.PointCloud, error)
	Beds(ctx context.Context, projects []string) <-chan spatial.BedResult
}

// Pool works the download queue (store/pcqueue.go) with a few workers. The queue is
// the state: the pool only remembers which jobs are in hand, so stopping it loses
// nothing and a new pool resumes where the old one stopped.
type Pool struct {
	store  Store
	source Source
	files  *Files
	cfg    Config
	now    func() time.Time
	log    zerolog.Logger

	kick chan struct{} // wakes the dispatcher; capacity 1

	mu       sync.Mutex
	busy     map[string]bool // jobs in hand, by project|0|cloud
	gen      uint64          // counts notify calls, so a scan can tell it missed one
	idle     chan struct{}   // closed while nothing but failed jobs is queued
	watchers map[int]func(Event)
	nextW    int
}

// Event is the outcome of one attempt at a job.
type Event struct {
	Project, Cloud string
	// Err is set when the attempt failed; the job stays queued (or is marked failed).
	Err error
	// Bytes is the size of the cloud's PLY file.
	Bytes int64
}

// NewPool is a pool of cfg.Workers downloading from source into files; now is the
// clock of the store (retries are measured with it).
func NewPool(st Store, source Source, files *Files, cfg Config, now func() time.Time, log zerolog.Logger) *Pool {
	return &Pool{
		store: st, source: source, files: files, cfg: cfg.WithDefaults(), now: now,
		log:      log.With().Str("component", "pointclouds").Logger(),
		kick:     make(chan struct{}, 1),
		busy:     map[string]bool{},
		idle:     make(chan struct{}),
		watchers: map[int]func(Event){},
	}
}

func jobKey(project, cloud string) string { return project + "\x00" + cloud }

// scanLimit bounds the jobs taken from one scan of the queue.
const scanLimit = 256

// Run dispatches due jobs to the workers until ctx ends; a job in progress then is
// abandoned as it was (its attempt is not counted) and the workers are waited for.
func (p *Pool) Run(ctx context.Context) {
	p.files.budget.enforce()
	jobs := make(chan store.CloudJob)
	var wg sync.WaitGroup
	for range p.cfg.Workers {
		wg.Go(func() {
			for j := range jobs {
				p.work(ctx, j)
			}
		})
	}
	defer func() {
		close(jobs)
		wg.Wait()
	}()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		p.mu.Lock()
		gen := p.gen
		p.mu.Unlock()
		due, next, pending, err := p.store.DueCloudJobs(scanLimit)
		if err != nil {
			p.log.Error().Err(err).Msg("read the download queue")
			next = p.now().Add(5 * time.Second)
		}
		sent := 0
		for _, j := range due {
			if !p.take(j) {
				continue
			}
			select {
			case jobs <- j:
				sent++
			case <-ctx.Done():
				p.drop(j)
				return
			}
		}
		if sent > 0 {
			continue
		}
		if err == nil && pending == 0 {
			p.setIdle(gen)
		}
		wait := time.Hour
		if !next.IsZero() {
			wait = max(next.Sub(p.now()), time.Millisecond)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-p.kick:
		case <-timer.C:
		}
	}
}

// take marks j as in hand; false when it already is.
func (p *Pool) take(j store.CloudJob) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := jobKey(j.Project, j.Cloud)
	if p.busy[k] {
		return false
	}
	p.busy[k] = true
	return true
}

// InHand counts the jobs taken and not yet done.
func (p *Pool) InHand() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.busy)
}

func (p *Pool) drop(j store.CloudJob) {
	p.mu.Lock()
	delete(p.busy, jobKey(j.Project, j.Cloud))
	p.mu.Unlock()
}

func (p *Pool) work(ctx context.Context, j store.CloudJob) {
	defer p.wake()
	defer p.drop(j)
	ev := p.fetch(ctx, j)
	if ev.Err != nil && ctx.Err() != nil {
		return // shutting down: nobody is waiting for this outcome
	}
	p.mu.Lock()
	fns := make([]func(Event), 0, len(p.watchers))
	for _, fn := range p.watchers {
		fns = append(fns, fn)
	}
	p.mu.Unlock()
	for _, fn := range fns {
		fn(ev)
	}
}

// wake makes the dispatcher scan again soon.
func (p *Pool) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// notify tells the pool that jobs were queued: it is no longer idle.
func (p *Pool) notify() {
	p.mu.Lock()
	p.gen++
	select {
	case <-p.idle:
		p.idle = make(chan struct{})
	default:
	}
	p.mu.Unlock()
	p.wake()
}

// setIdle marks the queue drained, unless jobs were queued since the scan of gen.
func (p *Pool) setIdle(gen uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gen != gen {
		return
	}
	select {
	case <-p.idle:
	default:
		close(p.idle)
	}
}

// WaitIdle blocks until the queue holds no job but those marked failed (none due,
// backing off or in progress), or ctx ends. Tests use it instead of sleeping.
func (p *Pool) WaitIdle(ctx context.Context) error {
	p.mu.Lock()
	idle := p.idle
	p.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// watch calls fn with the outcome of every later attempt, from the worker that made
// it (fn must be quick), until stop is called.
func (p *Pool) watch(fn func(Event)) (stop func()) {
	p.mu.Lock()
	id := p.nextW
	p.nextW++
	p.watchers[id] = fn
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		delete(p.watchers, id)
		p.mu.Unlock()
	}
}

// Enqueue queues jobs in one write and wakes the pool. Requests call it with what they
// found missing (Coords); failures are logged, as the next request finds the same.
func (p *Pool) Enqueue(jobs []store.CloudJob) {
	if len(jobs) == 0 {
		return
	}
	written, err := p.store.EnqueueClouds(jobs, p.cfg.Rearm)
	if err != nil {
		p.log.Error().Err(err).Int("clouds", len(jobs)).Msg("queue point-cloud downloads")
		return
	}
	if len(written) > 0 {
		p.log.Debug().Int("clouds", len(written)).Msg("queued point-cloud downloads")
		p.notify()
	}
}

// QueueCloud queues the download of one cloud of bed, if it needs one (a viewer
// asked for a cloud that is not kept).
func (p *Pool) QueueCloud(b spatial.Bed, cloudUUID string) {
	_, jobs, err := p.Coords(b, false)
	if err != nil {
		p.log.Error().Err(err).Str("project", b.ProjectUUID).Msg("read plant positions")
		return
	}
	var mine []store.CloudJob
	for _, j := range jobs {
		if j.Cloud == cloudUUID {
			mine = append(mine, j)
		}
	}
	p.Enqueue(mine)
}

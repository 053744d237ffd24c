package server

import (
	"context"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/store"
)

// cloudPool works the point-cloud download queue (store/pcqueue.go) with a few
// workers. The queue is the state: the pool only remembers which jobs are in hand, so
// stopping it loses nothing and a new pool resumes where the old one stopped.
type cloudPool struct {
	store  store.Backend
	client *spatial.Client
	dir    string // <data>/pointclouds
	cfg    CloudConfig
	now    func() time.Time
	log    zerolog.Logger
	budget *plyBudget // nil without CloudConfig.MaxBytes

	kick chan struct{} // wakes the dispatcher; capacity 1

	mu       sync.Mutex
	busy     map[string]bool // jobs in hand, by project|0|cloud
	gen      uint64          // counts notify calls, so a scan can tell it missed one
	idle     chan struct{}   // closed while nothing but failed jobs is queued
	watchers map[int]func(cloudEvent)
	nextW    int
}

// cloudEvent is the outcome of one attempt at a job.
type cloudEvent struct {
	Project, Cloud string
	// Err is set when the attempt failed; the job stays queued (or is marked failed).
	Err error
	// Bytes is the size of the cloud's PLY file.
	Bytes int64
}

// scanLimit bounds the jobs taken from one scan of the queue.
const scanLimit = 256

func newCloudPool(st store.Backend, c *spatial.Client, dir string, cfg CloudConfig, now func() time.Time, log zerolog.Logger) *cloudPool {
	log = log.With().Str("component", "pointclouds").Logger()
	return &cloudPool{
		store: st, client: c, dir: dir, cfg: cfg, now: now,
		log:      log,
		budget:   newPLYBudget(dir, cfg.MaxBytes, log),
		kick:     make(chan struct{}, 1),
		busy:     map[string]bool{},
		idle:     make(chan struct{}),
		watchers: map[int]func(cloudEvent){},
	}
}

func jobKey(project, cloud string) string { return project + "\x00" + cloud }

// run dispatches due jobs to the workers until ctx ends; a job in progress then is
// abandoned as it was (its attempt is not counted) and the workers are waited for.
func (p *cloudPool) run(ctx context.Context) {
	p.budget.enforce()
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
			if !p.claim(j) {
				continue
			}
			select {
			case jobs <- j:
				sent++
			case <-ctx.Done():
				p.release(j)
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

// claim marks j as in hand; false when it already is.
func (p *cloudPool) claim(j store.CloudJob) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := jobKey(j.Project, j.Cloud)
	if p.busy[k] {
		return false
	}
	p.busy[k] = true
	return true
}

// inHand counts the jobs claimed and not yet done.
func (p *cloudPool) inHand() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.busy)
}

func (p *cloudPool) release(j store.CloudJob) {
	p.mu.Lock()
	delete(p.busy, jobKey(j.Project, j.Cloud))
	p.mu.Unlock()
}

func (p *cloudPool) work(ctx context.Context, j store.CloudJob) {
	defer p.wake()
	defer p.release(j)
	ev := p.fetch(ctx, j)
	if ev.Err != nil && ctx.Err() != nil {
		return // shutting down: nobody is waiting for this outcome
	}
	p.mu.Lock()
	fns := make([]func(cloudEvent), 0, len(p.watchers))
	for _, fn := range p.watchers {
		fns = append(fns, fn)
	}
	p.mu.Unlock()
	for _, fn := range fns {
		fn(ev)
	}
}

// wake makes the dispatcher scan again soon.
func (p *cloudPool) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// notify tells the pool that jobs were queued: it is no longer idle.
func (p *cloudPool) notify() {
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
func (p *cloudPool) setIdle(gen uint64) {
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

func (p *cloudPool) waitIdle(ctx context.Context) error {
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
func (p *cloudPool) watch(fn func(cloudEvent)) (stop func()) {
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

// enqueue queues jobs in one write and wakes the pool. Requests call it with what they
// found missing; failures are logged, as the next request finds the same.
func (p *cloudPool) enqueue(jobs []store.CloudJob) {
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

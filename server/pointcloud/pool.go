package pointcloud

import (
	"context"
	"errors"
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
// the state: the pool claims due jobs for its node (Config.Node) only as workers come
// free, keeps the claim of a job in hand alive, and remembers nothing else, so
// stopping it loses nothing and a new pool, here or on another node, resumes where it
// stopped.
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

	// Refills of clouds not kept here (refill.go): in progress by project|0|cloud,
	// under base (Run's context while it runs).
	refills map[string]*refill
	base    context.Context
	// clouds holds a slot for every cloud in memory (a job's, a refill's): at most
	// Workers at once, each up to the spatial client's largest message.
	clouds chan struct{}
}

// Event is the outcome of one attempt at a job.
type Event struct {
	Project, Cloud string
	// Err is set when the attempt failed; the job stays queued (or is marked failed).
	Err error
	// Bytes is the size of the cloud's PLY file.
	Bytes int64
}

// ErrClaimLost: the node's claim on a job ended while it worked on it (the lease ran
// out, e.g. while the database could not be reached): another node may have it now,
// so this one stopped.
var ErrClaimLost = errors.New("the claim on the download ran out; the job is left to whoever claims it next")

// NewPool is a pool of cfg.Workers downloading from source into files; now is the
// clock of the store (leases and retries are measured with it).
func NewPool(st Store, source Source, files *Files, cfg Config, now func() time.Time, log zerolog.Logger) *Pool {
	return &Pool{
		store: st, source: source, files: files, cfg: cfg.WithDefaults(), now: now,
		log:      log.With().Str("component", "pointclouds").Logger(),
		kick:     make(chan struct{}, 1),
		busy:     map[string]bool{},
		idle:     make(chan struct{}),
		watchers: map[int]func(Event){},

		refills: map[string]*refill{},
		base:    context.Background(),
		clouds:  make(chan struct{}, cfg.WithDefaults().Workers),
	}
}

func jobKey(project, cloud string) string { return project + "\x00" + cloud }

// holdCloud takes a slot for a cloud in memory, waiting until ctx ends; call the
// result to give it back.
func (p *Pool) holdCloud(ctx context.Context) (release func(), err error) {
	select {
	case p.clouds <- struct{}{}:
		return func() { <-p.clouds }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Run dispatches due jobs to the workers until ctx ends; a job in progress then is
// abandoned as it was (its attempt is not counted), the workers are waited for and the
// node's claims released, so the jobs are due again at once.
func (p *Pool) Run(ctx context.Context) {
	p.mu.Lock()
	p.base = ctx // refills end with the pool
	p.mu.Unlock()
	p.files.budget.enforce()
	// Claims a previous run of this node left (a crash) stand for work that is lost.
	p.releaseClaims()
	defer p.releaseClaims()
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
		gen, free := p.gen, p.cfg.Workers-len(p.busy)
		p.mu.Unlock()
		wait := time.Hour
		// With every worker busy there is nothing to claim: a worker's end wakes the
		// dispatcher.
		if free > 0 {
			claimed, next, pending, err := p.store.ClaimCloudJobs(p.cfg.Node, free, p.cfg.Lease)
			if err != nil {
				p.log.Error().Err(err).Msg("read the download queue")
				next = p.now().Add(5 * time.Second)
			}
			sent := 0
			for _, j := range claimed {
				if !p.take(j) {
					continue // in hand already: its lease ran out under the worker
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
			if !next.IsZero() {
				wait = max(next.Sub(p.now()), time.Millisecond)
			}
		}
		if p.cfg.Poll > 0 {
			wait = min(wait, p.cfg.Poll)
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

// releaseClaims ends every claim of this node.
func (p *Pool) releaseClaims() {
	if n, err := p.store.ReleaseCloudClaims(p.cfg.Node); err != nil {
		p.log.Error().Err(err).Str("node", p.cfg.Node).Msg("release the claims on the download queue; they run out with their leases")
	} else if n > 0 {
		p.log.Debug().Int("jobs", n).Str("node", p.cfg.Node).Msg("released claims on the download queue")
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
	jctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	held := make(chan struct{})
	go func() {
		defer close(held)
		p.holdClaim(jctx, cancel, j)
	}()
	ev := p.fetch(jctx, j)
	cancel(nil)
	<-held
	if ctx.Err() != nil && ev.Err != nil {
		return // shutting down: nobody is waiting for this outcome
	}
	if errors.Is(context.Cause(jctx), ErrClaimLost) && ev.Err != nil {
		ev.Err = ErrClaimLost
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

// holdClaim renews the node's claim on j every third of the lease until ctx ends. When
// the claim is gone, or could not be renewed before the lease ran out, it cancels the
// work with ErrClaimLost: another node may be downloading the cloud by then.
func (p *Pool) holdClaim(ctx context.Context, cancel context.CancelCauseFunc, j store.CloudJob) {
	t := time.NewTicker(p.cfg.Lease / 3)
	defer t.Stop()
	until := p.now().Add(p.cfg.Lease)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		at := p.now()
		ok, err := p.store.RenewCloudClaim(p.cfg.Node, j.Project, j.Cloud, p.cfg.Lease)
		switch {
		case err == nil && ok:
			until = at.Add(p.cfg.Lease)
			continue
		case err == nil:
			p.log.Warn().Str("project", j.Project).Str("cloud", j.Cloud).Msg("the claim on a point-cloud download is gone; stopping it")
		case at.Before(until):
			p.log.Warn().Err(err).Str("project", j.Project).Str("cloud", j.Cloud).Msg("renew the claim on a point-cloud download; trying again")
			continue
		default:
			p.log.Error().Err(err).Str("project", j.Project).Str("cloud", j.Cloud).Msg("the claim on a point-cloud download ran out unrenewed; stopping it")
		}
		cancel(ErrClaimLost)
		return
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

// Why Fetch could not make a cloud kept.
var (
	// ErrQueued: the cloud's position is not computed yet; its download is queued,
	// and keeps the file too.
	ErrQueued = errors.New("its point cloud is not downloaded yet; it is queued, ask again in a few seconds")
	// ErrDownloadFailed: the download ran out of attempts; a request after
	// Config.Rearm queues it again.
	ErrDownloadFailed = errors.New("the download of its point cloud failed; it is tried again later")
	// ErrNoPosition: nothing can place the cloud (no transform for its frame, a bad
	// origin), so it is never downloaded.
	ErrNoPosition = errors.New("its point cloud cannot be placed on the map (no transform for its frame), so it is not downloaded")
)

// Fetch makes the cloud of a plant of bed kept, as a viewer asks for it. A cloud
// whose position is computed is kept unless the budget evicted it (or another node
// downloaded it): then it is fetched again, and Fetch waits for it until ctx ends. A
// cloud without a position is queued (ErrQueued): its job keeps the file with the
// position. The decision is the file's, never the position's: a position computed
// long ago says nothing about a file still being there.
func (p *Pool) Fetch(ctx context.Context, b spatial.Bed, cloudUUID string) error {
	var in store.CloudInputs
	ok := false
	for _, pl := range b.Plants {
		if pl.Cloud != nil && pl.Cloud.UUID == cloudUUID {
			in, ok = Inputs(b, pl)
			break
		}
	}
	if !ok {
		return ErrNoPosition
	}
	state, err := p.store.CloudState(b.ProjectUUID)
	if err != nil {
		return err
	}
	if _, fresh := state.Fresh(cloudUUID, in); fresh {
		return p.Keep(ctx, b.ProjectUUID, cloudUUID)
	}
	now := p.now()
	if state.NeedsJob(cloudUUID, in, now, p.cfg.Rearm) {
		p.Enqueue([]store.CloudJob{{Project: b.ProjectUUID, Cloud: cloudUUID, CloudInputs: in}})
		return ErrQueued
	}
	if j, ok := state.Jobs[cloudUUID]; ok && j.Failed {
		return ErrDownloadFailed
	}
	return ErrQueued
}

// Evicted returns the clouds of bed whose position is computed from the inputs the
// spatial server reports now and whose file is not kept here: evicted by the budget,
// or downloaded by another node. (A cloud without such a position is queued or
// failed; its job keeps the file with the position.)
func (p *Pool) Evicted(b spatial.Bed) ([]string, error) {
	state, err := p.store.CloudState(b.ProjectUUID)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, pl := range b.Plants {
		in, ok := Inputs(b, pl)
		if !ok {
			continue
		}
		if _, fresh := state.Fresh(pl.Cloud.UUID, in); fresh && !p.files.Kept(b.ProjectUUID, pl.Cloud.UUID) {
			out = append(out, pl.Cloud.UUID)
		}
	}
	return out, nil
}

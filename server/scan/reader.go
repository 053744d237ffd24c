package scan

import (
	"context"
	"errors"
	"hash/fnv"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/store"
)

// Store is what the Reader needs of the database.
type Store interface {
	Beds() ([]store.Bed, error)
	store.HistoryStore
	store.LeaseStore
}

// Source reads a bed from the spatial server (*spatial.Client): the same client,
// call slots and cache as requests.
type Source interface {
	Bed(ctx context.Context, projectUUID string) (spatial.Bed, error)
}

// Config tunes a Reader. Zero values take the defaults.
type Config struct {
	// Interval is how often every bed is read; 0 turns reading off (retention still
	// runs).
	Interval time.Duration
	// Retention is how long points are kept; 0 keeps them for good.
	Retention time.Duration
	// Node names this node in the lease.
	Node string
	// Lease is how long the lease is taken for (renewed every third of it); default
	// DefaultLease.
	Lease time.Duration
	// BedTimeout bounds the read of one bed; default DefaultBedTimeout.
	BedTimeout time.Duration
	// RetentionEvery is how often old points are dropped; default one hour.
	RetentionEvery time.Duration
}

// Defaults of Config.
const (
	DefaultLease      = 30 * time.Second
	DefaultBedTimeout = 2 * time.Minute
	// LeaseName is the lease the background work of history runs under.
	LeaseName = "history-reader"
	// share is the share of the spatial client's call slots the reader draws from:
	// it takes turns with the gardens' requests instead of queueing before them.
	share = "background reader"
	// bedsRefresh is how often the list of beds is read again.
	bedsRefresh = time.Minute
)

func (c Config) withDefaults() Config {
	if c.Lease <= 0 {
		c.Lease = DefaultLease
	}
	if c.BedTimeout <= 0 {
		c.BedTimeout = DefaultBedTimeout
	}
	if c.RetentionEvery <= 0 {
		c.RetentionEvery = time.Hour
	}
	return c
}

// Reader reads every registered bed every Interval, each at a fixed offset within
// the interval drawn from the bed (so 500 beds are spread over the hour, not read at
// once, and a node taking over keeps the schedule), and drops points older than the
// retention. It does either only while its node holds the lease (LeaseName): one
// node of a cluster at a time. It never holds a transaction while it reads.
type Reader struct {
	st     Store
	src    Source
	keep   func(*spatial.Bed) error
	name   func(store.Bed, *spatial.Bed) string
	rec    *Recorder
	cfg    Config
	now    func() time.Time
	log    zerolog.Logger
	onRead func(store.Bed, store.Recorded, error)

	mu      sync.Mutex
	holding bool

	read, failed atomic.Int64
}

// ReaderStats counts the reads of beds by a Reader since it was made.
type ReaderStats struct {
	Holding      bool
	Read, Failed int64
}

// Stats returns whether the reader holds the lease, and its reads so far.
func (r *Reader) Stats() ReaderStats {
	return ReaderStats{Holding: r.Holding(), Read: r.read.Load(), Failed: r.failed.Load()}
}

// NewReader reads beds from src (nil: no spatial server, only retention runs),
// gives their plants the kept ids with keep, names them with name and records them
// with rec. now is the store's clock (leases are measured with it).
func NewReader(st Store, src Source, keep func(*spatial.Bed) error, name func(store.Bed, *spatial.Bed) string,
	rec *Recorder, cfg Config, now func() time.Time, log zerolog.Logger) *Reader {
	return &Reader{st: st, src: src, keep: keep, name: name, rec: rec, cfg: cfg.withDefaults(), now: now,
		log: log.With().Str("component", "history").Logger()}
}

// OnRead sets a function told of every bed read (tests); call it before Run.
func (r *Reader) OnRead(fn func(store.Bed, store.Recorded, error)) { r.onRead = fn }

// Holding reports whether this node holds the lease now.
func (r *Reader) Holding() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.holding
}

func (r *Reader) setHolding(v bool) {
	r.mu.Lock()
	r.holding = v
	r.mu.Unlock()
}

// Run works until ctx ends: it waits for the lease, works while it holds it, and
// releases it when it stops.
func (r *Reader) Run(ctx context.Context) {
	if r.cfg.Node == "" {
		r.log.Error().Msg("no node name; history's background work is off")
		return
	}
	retry := r.cfg.Lease / 3
	for {
		held, err := r.st.AcquireLease(LeaseName, r.cfg.Node, r.cfg.Lease)
		if err != nil {
			r.log.Warn().Err(err).Msg("take the history lease; trying again")
		}
		if held {
			r.hold(ctx)
		}
		if !sleep(ctx, retry) {
			return
		}
	}
}

// hold works while the lease is held: the renewal cancels the work when the lease is
// lost or could not be renewed in time. The lease is released when ctx ends.
func (r *Reader) hold(ctx context.Context) {
	until := r.now().Add(r.cfg.Lease)
	work, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r.setHolding(true)
	defer r.setHolding(false)
	r.log.Info().Str("node", r.cfg.Node).Dur("interval", r.cfg.Interval).Dur("retention", r.cfg.Retention).Msg("this node reads the beds for history")
	var wg sync.WaitGroup
	wg.Go(func() { r.work(work) })
	t := time.NewTicker(r.cfg.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-work.Done():
			wg.Wait()
			if ctx.Err() != nil {
				// Shutting down: hand the lease on at once rather than when it runs out.
				if err := r.st.ReleaseLease(LeaseName, r.cfg.Node); err != nil {
					r.log.Warn().Err(err).Msg("release the history lease; it runs out by itself")
				}
			}
			return
		case <-t.C:
		}
		at := r.now()
		held, err := r.st.AcquireLease(LeaseName, r.cfg.Node, r.cfg.Lease)
		switch {
		case err == nil && held:
			until = at.Add(r.cfg.Lease)
			continue
		case err == nil:
			r.log.Warn().Msg("another node took the history lease; this one stops reading")
		case at.Before(until):
			r.log.Warn().Err(err).Msg("renew the history lease; trying again")
			continue
		default:
			r.log.Error().Err(err).Msg("the history lease ran out unrenewed; this one stops reading")
		}
		cancel(errLeaseLost)
	}
}

var errLeaseLost = errors.New("the history lease was lost")

// work drops old points every RetentionEvery and reads beds on schedule, until ctx
// ends.
func (r *Reader) work(ctx context.Context) {
	var wg sync.WaitGroup
	if r.cfg.Retention > 0 {
		wg.Go(func() {
			for {
				r.dropOld()
				if !sleep(ctx, r.cfg.RetentionEvery) {
					return
				}
			}
		})
	}
	if r.src != nil && r.cfg.Interval > 0 {
		wg.Go(func() { r.schedule(ctx) })
	}
	wg.Wait()
}

func (r *Reader) dropOld() {
	n, err := r.st.DropHistoryBefore(r.now().Add(-r.cfg.Retention))
	switch {
	case err != nil:
		r.log.Error().Err(err).Msg("drop old history")
	case n > 0:
		r.log.Info().Int("points", n).Dur("retention", r.cfg.Retention).Msg("dropped old history")
	}
}

// offset is a bed's fixed place within the interval.
func offset(b store.Bed, interval time.Duration) time.Duration {
	h := fnv.New64a()
	h.Write([]byte(b.UUID))
	h.Write([]byte(strconv.FormatUint(b.ID, 10)))
	return time.Duration(h.Sum64() % uint64(interval))
}

// due is the bed's first reading time at or after now.
func due(b store.Bed, interval time.Duration, now time.Time) time.Time {
	at := now.Truncate(interval).Add(offset(b, interval))
	if at.Before(now) {
		at = at.Add(interval)
	}
	return at
}

// schedule reads each bed at its time in every interval.
func (r *Reader) schedule(ctx context.Context) {
	next := map[uint64]time.Time{}
	beds := map[uint64]store.Bed{}
	var listed time.Time
	refresh := min(bedsRefresh, r.cfg.Interval)
	for {
		if now := r.now(); listed.IsZero() || now.Sub(listed) >= refresh {
			all, err := r.st.Beds()
			if err != nil {
				r.log.Warn().Err(err).Msg("list the beds to read")
			} else {
				listed = now
				seen := make(map[uint64]bool, len(all))
				for _, b := range all {
					if !store.IsLocal(b.ID) {
						continue // a replica's history comes from its home
					}
					seen[b.ID] = true
					beds[b.ID] = b
					if _, ok := next[b.ID]; !ok {
						next[b.ID] = due(b, r.cfg.Interval, now)
					}
				}
				for id := range next {
					if !seen[id] {
						delete(next, id)
						delete(beds, id)
					}
				}
			}
		}
		var (
			first uint64
			at    time.Time
		)
		for id, t := range next {
			if at.IsZero() || t.Before(at) || t.Equal(at) && id < first {
				first, at = id, t
			}
		}
		wait := refresh
		if !at.IsZero() {
			wait = min(wait, at.Sub(r.now()))
		}
		if wait > 0 {
			if !sleep(ctx, wait) {
				return
			}
			continue
		}
		b := beds[first]
		r.readBed(ctx, b)
		if ctx.Err() != nil {
			return
		}
		n := at.Add(r.cfg.Interval)
		if now := r.now(); n.Before(now) {
			n = due(b, r.cfg.Interval, now) // fell behind: the next slot, not a burst
		}
		next[first] = n
	}
}

// ReadAll reads every bed once, one after the other (tests, benchmarks).
func (r *Reader) ReadAll(ctx context.Context) error {
	if r.src == nil {
		return errors.New("no spatial data server")
	}
	beds, err := r.st.Beds()
	if err != nil {
		return err
	}
	for _, b := range beds {
		if !store.IsLocal(b.ID) {
			continue // a replica's history comes from its home
		}
		r.readBed(ctx, b)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

// readBed reads one bed and records it.
func (r *Reader) readBed(ctx context.Context, b store.Bed) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.BedTimeout)
	defer cancel()
	ctx = spatial.WithCaller(ctx, spatial.Caller{RequestID: "history-reader", Share: share})
	read := r.now()
	bed, err := r.src.Bed(ctx, b.UUID)
	var rec store.Recorded
	if err == nil {
		err = r.keep(&bed)
	}
	if err == nil {
		rec, _, err = r.rec.Record(Reading(b, r.name(b, &bed), bed, read))
	}
	if err == nil {
		r.read.Add(1)
	} else {
		r.failed.Add(1)
	}
	switch {
	case err != nil && ctx.Err() != nil:
	case err != nil:
		r.log.Warn().Err(err).Uint64("bed_id", b.ID).Msg("read a bed for history")
	case rec.Plants > 0 || rec.Raised+rec.Closed > 0:
		r.log.Debug().Uint64("bed_id", b.ID).Int("plants", rec.Plants).Int("raised", rec.Raised).Int("closed", rec.Closed).Msg("bed read for history")
	}
	if r.onRead != nil {
		r.onRead(b, rec, err)
	}
}

// sleep waits d or until ctx ends, and reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

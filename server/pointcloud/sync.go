package pointcloud

import (
	"context"
	"os"
	"slices"
	"sync"

	"github.com/gardend/gardend/store"
)

// Progress is one report of Sync (a line of "pointclouds.sync").
type Progress struct {
	// Total is the number of clouds to fetch; Done those finished (Failed of them
	// with an error: their jobs stay queued for the background workers).
	Total  int   `json:"total"`
	Done   int   `json:"done"`
	Failed int   `json:"failed"`
	Bytes  int64 `json:"bytes"`
	// Beds is the number of beds (projects) read, BedsFailed those that could not be
	// read (each reported on an Error line): their clouds are not counted in Total.
	Beds       int `json:"beds"`
	BedsFailed int `json:"beds_failed,omitempty"`
	// Error reports a bed that could not be read, or why the sync stopped.
	Error string `json:"error,omitempty"`
	// Final marks the last line.
	Final bool `json:"final,omitempty"`
}

// Sync queues every missing cloud of the projects (forcing failed and backing-off ones
// due now) and reports its progress to emit until each has had an attempt by a pool
// (this one, when it runs, or another node's). A cloud whose position is computed but
// whose file is not kept here (evicted by the budget, or downloaded by another node)
// is missing too: it is fetched again, without the queue. The last report is Final.
func (p *Pool) Sync(ctx context.Context, projects []string, emit func(Progress)) {
	var (
		prog    = Progress{Beds: len(projects)}
		jobs    []store.CloudJob
		evicted []store.CloudJob // Project and Cloud only
	)
	for res := range p.source.Beds(ctx, projects) {
		if res.Err != nil {
			prog.BedsFailed++
			emit(Progress{Error: "project " + projects[res.Index] + ": " + res.Err.Error()})
			continue
		}
		_, bedJobs, err := p.Coords(res.Bed, true)
		if err != nil {
			prog.BedsFailed++
			emit(Progress{Error: "project " + res.Bed.ProjectUUID + ": stored positions: " + err.Error()})
			continue
		}
		jobs = append(jobs, bedJobs...)
		gone, err := p.Evicted(res.Bed)
		if err != nil {
			prog.BedsFailed++
			emit(Progress{Error: "project " + res.Bed.ProjectUUID + ": stored positions: " + err.Error()})
			continue
		}
		for _, c := range gone {
			evicted = append(evicted, store.CloudJob{Project: res.Bed.ProjectUUID, Cloud: c})
		}
	}
	if ctx.Err() != nil {
		prog.Error, prog.Final = ctx.Err().Error(), true
		emit(prog)
		return
	}

	var mu sync.Mutex
	prog.Total = len(jobs) + len(evicted)
	pending := map[string]bool{}
	for _, j := range append(slices.Clip(jobs), evicted...) {
		pending[jobKey(j.Project, j.Cloud)] = true
	}
	changed := make(chan struct{}, 1)
	finish := func(key string, ev Event) {
		if !pending[key] {
			return
		}
		delete(pending, key)
		prog.Done++
		prog.Bytes += ev.Bytes
		if ev.Err != nil {
			prog.Failed++
		}
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	// Watch before queueing, so no outcome is missed.
	stop := p.watch(func(ev Event) {
		mu.Lock()
		defer mu.Unlock()
		finish(jobKey(ev.Project, ev.Cloud), ev)
	})
	defer stop()
	written, err := p.store.EnqueueClouds(jobs, 0)
	if err != nil {
		prog.Error, prog.Final = "queue the downloads: "+err.Error(), true
		emit(prog)
		return
	}
	queued := map[string]bool{}
	for _, j := range written {
		queued[jobKey(j.Project, j.Cloud)] = true
	}
	mu.Lock()
	// Not written: computed meanwhile, or the bed went. Nothing to wait for.
	for _, j := range jobs {
		if k := jobKey(j.Project, j.Cloud); !queued[k] {
			finish(k, Event{})
		}
	}
	mu.Unlock()
	p.notify()
	// Files to fetch again, as many at once as the pool has workers (Keep's limit).
	refills := make(chan store.CloudJob)
	var wg sync.WaitGroup
	defer wg.Wait()
	for range min(p.cfg.Workers, len(evicted)) {
		wg.Go(func() {
			for j := range refills {
				ev := Event{Project: j.Project, Cloud: j.Cloud, Err: p.Keep(ctx, j.Project, j.Cloud)}
				if ev.Err == nil {
					if path, err := p.files.Path(j.Project, j.Cloud); err == nil {
						if st, err := os.Stat(path); err == nil {
							ev.Bytes = st.Size()
						}
					}
				}
				mu.Lock()
				finish(jobKey(j.Project, j.Cloud), ev)
				mu.Unlock()
			}
		})
	}
	go func() {
		defer close(refills)
		for _, j := range evicted {
			select {
			case refills <- j:
			case <-ctx.Done():
				return
			}
		}
	}()
	for {
		mu.Lock()
		cur, left := prog, len(pending)
		mu.Unlock()
		if left == 0 {
			cur.Final = true
			emit(cur)
			return
		}
		emit(cur)
		select {
		case <-changed:
		case <-ctx.Done():
			cur.Error, cur.Final = ctx.Err().Error(), true
			emit(cur)
			return
		}
	}
}

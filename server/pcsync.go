package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sort"
	"sync"

	"github.com/rs/zerolog"

	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/store"
)

// `gardend pointclouds sync` has one implementation for both ways the CLI reaches the
// data: it queues every missing cloud (forcing failed and backing-off ones due now)
// and watches a download pool work them off, streaming progress lines. Through the
// admin socket the pool is the running server's, so nothing is fetched twice; in
// process, UseSpatial builds a pool that runs only for the operation.

// CloudSyncArgs are the arguments of "pointclouds.sync": one garden, or all when 0.
type CloudSyncArgs struct {
	Garden uint64 `json:"garden,omitempty"`
}

// CloudSyncProgress is one NDJSON line of "pointclouds.sync".
type CloudSyncProgress struct {
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

// UseSpatial lets an Admin without a server (the CLI in process) reach a spatial
// server: operations that download point clouds run a pool of their own while they
// last. Call the returned function when done.
func (a *Admin) UseSpatial(dataDir string, cfg spatial.ClientConfig, clouds CloudConfig, log zerolog.Logger) (func(), error) {
	c, err := spatial.Dial(cfg, log)
	if err != nil {
		return nil, err
	}
	clouds.setDefaults()
	a.clouds = newCloudPool(a.store, c, filepath.Join(dataDir, PointCloudDirName), clouds, a.store.Now, log)
	a.runClouds = true
	return func() { c.Close() }, nil
}

func (a *Admin) syncClouds(ctx context.Context, raw json.RawMessage) (any, error) {
	var args CloudSyncArgs
	if err := decodeArgs(raw, &args); err != nil {
		return nil, err
	}
	if a.clouds == nil {
		return nil, fmt.Errorf("%w: run it while gardend serve runs with one, or pass --spatial HOST:PORT", errNoSpatial)
	}
	var (
		beds []store.Bed
		err  error
	)
	if args.Garden != 0 {
		beds, err = a.store.BedsOfGarden(args.Garden)
	} else {
		beds, err = a.store.Beds()
	}
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var projects []string
	for _, b := range beds {
		if !seen[b.UUID] {
			seen[b.UUID] = true
			projects = append(projects, b.UUID)
		}
	}
	sort.Strings(projects)
	return StreamResult(func(w io.Writer) {
		emit := func(p CloudSyncProgress) {
			line, _ := json.Marshal(p)
			w.Write(append(line, '\n'))
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
		}
		if a.runClouds {
			pctx, stop := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() {
				defer close(done)
				a.clouds.run(pctx)
			}()
			defer func() {
				stop()
				<-done
			}()
		}
		a.clouds.sync(ctx, projects, emit)
	}), nil
}

// sync queues the missing clouds of the projects and reports until each has had an
// attempt.
func (p *cloudPool) sync(ctx context.Context, projects []string, emit func(CloudSyncProgress)) {
	var (
		prog = CloudSyncProgress{Beds: len(projects)}
		jobs []store.CloudJob
	)
	for res := range p.client.Beds(ctx, projects) {
		if res.Err != nil {
			prog.BedsFailed++
			emit(CloudSyncProgress{Error: "project " + projects[res.Index] + ": " + res.Err.Error()})
			continue
		}
		_, bedJobs, err := p.plantCoords(res.Bed, true)
		if err != nil {
			prog.BedsFailed++
			emit(CloudSyncProgress{Error: "project " + res.Bed.ProjectUUID + ": stored positions: " + err.Error()})
			continue
		}
		jobs = append(jobs, bedJobs...)
	}
	if ctx.Err() != nil {
		prog.Error, prog.Final = ctx.Err().Error(), true
		emit(prog)
		return
	}

	var mu sync.Mutex
	prog.Total = len(jobs)
	pending := map[string]bool{}
	for _, j := range jobs {
		pending[jobKey(j.Project, j.Cloud)] = true
	}
	changed := make(chan struct{}, 1)
	finish := func(key string, ev cloudEvent) {
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
	stop := p.watch(func(ev cloudEvent) {
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
			finish(k, cloudEvent{})
		}
	}
	mu.Unlock()
	p.notify()
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

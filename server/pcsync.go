package server

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"

	"github.com/rs/zerolog"

	"github.com/gardend/gardend/server/pointcloud"
	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/store"
)

// `gardend pointclouds sync` has one implementation for both ways the CLI reaches the
// data: it queues every missing cloud (forcing failed and backing-off ones due now)
// and watches a download pool work them off, streaming progress lines. Through the
// admin socket the pool is the running server's, so nothing is fetched twice; in
// process, UseSpatial builds a pool that runs only for the operation.

// PointCloudsSync fetches every missing cloud of one garden, or of all when Garden
// is 0 ("pointclouds.sync"). It answers progress reports until the last, Final one.
type PointCloudsSync struct {
	Garden uint64 `json:"garden,omitempty"`
}

func (PointCloudsSync) OpName() string { return "pointclouds.sync" }

// UseSpatial lets an Admin without a server (the CLI in process) reach a spatial
// server: operations that download point clouds run a pool of their own while they
// last. Call the returned function when done.
func (a *Admin) UseSpatial(dataDir string, cfg spatial.ClientConfig, clouds pointcloud.Config, log zerolog.Logger) (func(), error) {
	c, err := spatial.Dial(cfg, log)
	if err != nil {
		return nil, err
	}
	if clouds.Node == "" {
		// A name of its own: its start and end must not free the claims of a server
		// on this host.
		clouds.Node = pointcloud.DefaultNode() + "/pointclouds-sync-" + strconv.Itoa(os.Getpid())
	}
	files := pointcloud.NewFiles(dataDir, clouds.MaxBytes, log)
	a.clouds = pointcloud.NewPool(a.store, c, files, clouds, a.store.Now, log)
	a.runClouds = true
	return func() { _ = c.Close() }, nil // the sync is over: a failed close loses nothing
}

func (op PointCloudsSync) run(ctx context.Context, a *Admin, answer func(pointcloud.Progress) error) error {
	if a.clouds == nil {
		return fmt.Errorf("%w: run it while gardend serve runs with one, or pass --spatial HOST:PORT", errNoSpatial)
	}
	var (
		beds []store.Bed
		err  error
	)
	if op.Garden != 0 {
		beds, err = a.store.BedsOfGarden(op.Garden)
	} else {
		beds, err = a.store.Beds()
	}
	if err != nil {
		return err
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
	if a.runClouds {
		pctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			a.clouds.Run(pctx)
		}()
		defer func() {
			stop()
			<-done
		}()
	}
	// A report that cannot be delivered (the CLI went away) ends the sync.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var failed error
	a.clouds.Sync(ctx, projects, func(p pointcloud.Progress) {
		if failed == nil {
			if failed = answer(p); failed != nil {
				cancel(failed)
			}
		}
	})
	return failed
}

package pointcloud

import (
	"context"
	"os"
)

// Nodes of a cluster share the positions but not the files: each keeps the clouds it
// downloaded. A request that wants the file of a cloud another node downloaded (the 3D
// scene, a signed URL another node handed out) has this node fetch it from the spatial
// server into its own files; so does one the budget evicted. Keep waits for it,
// Refill starts it in the background. Either way a download holds one of the pool's
// cloud slots (with the jobs': at most Config.Workers clouds in memory at once), and
// one cloud asked for by many requests is downloaded once. They touch neither the
// queue nor the positions.

// refill is one cloud being fetched into the files.
type refill struct {
	done chan struct{}
	err  error // set before done is closed
}

// Keep makes sure this node keeps the cloud, downloading it unless it is kept or
// already on its way, and waits for it until ctx ends.
func (p *Pool) Keep(ctx context.Context, project, cloudUUID string) error {
	r, err := p.startRefill(project, cloudUUID)
	if err != nil || r == nil {
		return err
	}
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Refill starts keeping the clouds of project that this node does not keep, in the
// background.
func (p *Pool) Refill(project string, clouds []string) {
	for _, c := range clouds {
		if _, err := p.startRefill(project, c); err != nil {
			p.log.Warn().Err(err).Str("project", project).Str("cloud", c).Msg("refill a point cloud")
		}
	}
}

// startRefill returns the refill of the cloud, started now or earlier; nil when the
// cloud is kept.
func (p *Pool) startRefill(project, cloudUUID string) (*refill, error) {
	path, err := p.files.Path(project, cloudUUID)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); err == nil {
		return nil, nil
	}
	key := jobKey(project, cloudUUID)
	p.mu.Lock()
	defer p.mu.Unlock()
	if r := p.refills[key]; r != nil {
		return r, nil
	}
	r := &refill{done: make(chan struct{})}
	p.refills[key] = r
	ctx := p.base
	go func() {
		defer func() {
			p.mu.Lock()
			delete(p.refills, key)
			p.mu.Unlock()
			close(r.done)
		}()
		release, err := p.holdCloud(ctx)
		if err != nil {
			r.err = err
			return
		}
		defer release()
		pc, err := p.source.PointCloud(ctx, project, cloudUUID)
		if err == nil {
			_, err = p.files.write(path, pc)
		}
		if err != nil {
			r.err = err
			p.log.Warn().Err(err).Str("project", project).Str("cloud", cloudUUID).Msg("point cloud not kept here; fetching it from the spatial server failed")
			return
		}
		p.log.Info().Str("project", project).Str("cloud", cloudUUID).Msg("point cloud kept here too")
	}()
	return r, nil
}

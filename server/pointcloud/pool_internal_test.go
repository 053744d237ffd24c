package pointcloud

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/bolt"
)

// TestPoolComputesPositions: queued jobs flow through the pool into positions and
// kept PLY files, and the queue empties.
func TestPoolComputesPositions(t *testing.T) {
	st := openStore(t)
	src := newHeldSource()
	close(src.release)
	files := NewFiles(t.TempDir(), 0, zerolog.Nop())
	p := NewPool(st, src, files, Config{}, st.Now, zerolog.Nop())
	p.Enqueue([]store.CloudJob{mapJob(cloudA), mapJob(cloudB)})
	startPool(t, p)
	state := drained(t, p, st)
	if len(state.Jobs) != 0 || len(state.Positions) != 2 {
		t.Fatalf("jobs %+v, positions %+v", state.Jobs, state.Positions)
	}
	for _, c := range []string{cloudA, cloudB} {
		if pos := state.Positions[c]; pos.Position == nil || pos.Points != 2 {
			t.Errorf("%s: %+v", c, pos)
		}
		if _, ok := files.Centre(project, c); !ok {
			t.Errorf("%s: no PLY file kept", c)
		}
	}
}

// TestPoolClaimsAsWorkersComeFree: the pool claims only as many jobs as it has free
// workers, renews the claim of a long download, and releases its claims when it stops,
// so the jobs are due again at once and the interrupted attempt is not counted.
func TestPoolClaimsAsWorkersComeFree(t *testing.T) {
	st, src, p := leasedPool(t)
	p.Enqueue([]store.CloudJob{mapJob(cloudA), mapJob(cloudB)})
	stop := startPool(t, p)

	first := <-src.entered
	other := map[string]string{cloudA: cloudB, cloudB: cloudA}[first]
	held := jobOf(t, st, first)
	if held.ClaimedBy != "node-1" {
		t.Fatalf("the job in hand is claimed by %q", held.ClaimedBy)
	}
	if j := jobOf(t, st, other); j.ClaimedBy != "" {
		t.Fatalf("a job waiting for a worker is claimed by %q", j.ClaimedBy)
	}
	// A download that outlasts the lease keeps its claim.
	eventually(t, "the lease renewed", func() bool { return jobOf(t, st, first).ClaimUntil.After(held.ClaimUntil) })

	stop()
	for _, c := range []string{cloudA, cloudB} {
		j := jobOf(t, st, c)
		if j.ClaimedBy != "" || j.Attempts != 0 || j.Failed {
			t.Errorf("after shutdown: %+v", j)
		}
	}
}

// TestPoolReleasesClaimsOfItsLastRun: claims of the same node left by a crash are
// freed when the pool starts, instead of holding the jobs until their leases end.
func TestPoolReleasesClaimsOfItsLastRun(t *testing.T) {
	st := openStore(t)
	if _, err := st.EnqueueClouds([]store.CloudJob{mapJob(cloudA)}, 0); err != nil {
		t.Fatal(err)
	}
	if claimed, _, _, err := st.ClaimCloudJobs("node-1", 0, time.Hour); err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v, %v", claimed, err)
	}
	src := newHeldSource()
	close(src.release)
	p := NewPool(st, src, NewFiles(t.TempDir(), 0, zerolog.Nop()), Config{Node: "node-1"}, st.Now, zerolog.Nop())
	startPool(t, p)
	state := drained(t, p, st)
	if pos, ok := state.Positions[cloudA]; !ok || pos.Position == nil || len(state.Jobs) != 0 {
		t.Fatalf("after the restart: positions %+v, jobs %+v", state.Positions, state.Jobs)
	}
}

// TestPoolStopsWhenItsClaimIsGone: a download whose claim another node took over
// (here: released behind the pool's back) stops at the next renewal, is reported as
// ErrClaimLost, and counts no attempt.
func TestPoolStopsWhenItsClaimIsGone(t *testing.T) {
	st, src, p := leasedPool(t)
	// A renewal between the release and node-2's claim would end the download and
	// let the pool claim the job again before node-2 does: the takeover holds them off.
	gated := &renewGate{Store: st}
	p.store = gated
	events := make(chan Event, 8)
	defer p.watch(func(ev Event) { events <- ev })()
	p.Enqueue([]store.CloudJob{mapJob(cloudA)})
	startPool(t, p)
	<-src.entered
	func() {
		gated.mu.Lock()
		defer gated.mu.Unlock()
		if _, err := st.ReleaseCloudClaims("node-1"); err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := st.ClaimCloudJobs("node-2", 0, time.Hour); err != nil {
			t.Fatal(err)
		}
	}()
	ev := <-events
	if !errors.Is(ev.Err, ErrClaimLost) || ev.Cloud != cloudA {
		t.Fatalf("event %+v, want ErrClaimLost", ev)
	}
	if j := jobOf(t, st, cloudA); j.ClaimedBy != "node-2" || j.Attempts != 0 {
		t.Errorf("job after the takeover: %+v", j)
	}
}

// leasedPool is a pool of one worker of node-1 whose claims last 30 ms unless renewed,
// on a store with one bed, downloading from a held source.
func leasedPool(t *testing.T) (*bolt.Store, *heldSource, *Pool) {
	t.Helper()
	st := openStore(t)
	src := newHeldSource()
	p := NewPool(st, src, NewFiles(t.TempDir(), 0, zerolog.Nop()),
		Config{Workers: 1, Node: "node-1", Lease: 30 * time.Millisecond}, st.Now, zerolog.Nop())
	return st, src, p
}

// renewGate is a store whose claim renewals wait while the test holds mu.
type renewGate struct {
	Store
	mu sync.Mutex
}

func (g *renewGate) RenewCloudClaim(node, project, cloud string, lease time.Duration) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.Store.RenewCloudClaim(node, project, cloud, lease)
}

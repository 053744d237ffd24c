package pointcloud

import (
	"context"
	"encoding/binary"
	"math"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/cloud"
	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/bolt"
)

const (
	project = "3fa85f64-5717-4562-b3fc-2c963f66afa6"
	cloudA  = "0b5e8a1c-1111-4111-8111-111111111111"
	cloudB  = "0b5e8a1c-2222-4222-8222-222222222222"
)

// openStore is a bbolt store with one bed of project, checked at cleanup.
func openStore(t *testing.T) *bolt.Store {
	t.Helper()
	st, err := bolt.Open(filepath.Join(t.TempDir(), bolt.FileName), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Check(); err != nil {
			t.Error(err)
		}
		st.Close()
	})
	u, err := st.CreateUser(store.NewUser{Username: "ann", FirstName: "A", LastName: "B", PasswordHash: "x"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := st.CreateCompany(u.ID, "Farm")
	if err != nil {
		t.Fatal(err)
	}
	g, err := st.CreateGarden(c.ID, "Garden")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateBed(g.ID, project, "bed"); err != nil {
		t.Fatal(err)
	}
	return st
}

// xyzCloud is a cloud of float32 x, y, z points.
func xyzCloud(pts ...[3]float32) cloud.PointCloud {
	pc := cloud.PointCloud{Width: uint32(len(pts)), Height: 1, PointStep: 12, RowStep: 12 * uint32(len(pts)),
		Fields: []cloud.Field{{Name: "x", Offset: 0, Datatype: cloud.Float32, Count: 1},
			{Name: "y", Offset: 4, Datatype: cloud.Float32, Count: 1}, {Name: "z", Offset: 8, Datatype: cloud.Float32, Count: 1}}}
	for _, p := range pts {
		for _, v := range p {
			pc.Data = binary.LittleEndian.AppendUint32(pc.Data, math.Float32bits(v))
		}
	}
	return pc
}

// heldSource answers PointCloud once the test lets the call go: entered receives the
// cloud's uuid when a download starts, release lets one finish.
type heldSource struct {
	entered chan string
	release chan struct{}
	mu      sync.Mutex
	calls   map[string]int
}

func newHeldSource() *heldSource {
	return &heldSource{entered: make(chan string, 8), release: make(chan struct{}), calls: map[string]int{}}
}

func (s *heldSource) PointCloud(ctx context.Context, _, cloudUUID string) (cloud.PointCloud, error) {
	s.mu.Lock()
	s.calls[cloudUUID]++
	s.mu.Unlock()
	s.entered <- cloudUUID
	select {
	case <-s.release:
		return xyzCloud([3]float32{1, 2, 0}, [3]float32{3, 4, 0}), nil
	case <-ctx.Done():
		return cloud.PointCloud{}, ctx.Err()
	}
}

func (s *heldSource) Beds(context.Context, []string) <-chan spatial.BedResult {
	panic("not used")
}

// mapJob is a job of a cloud in the map frame at a fixed origin.
func mapJob(cloudUUID string) store.CloudJob {
	return store.CloudJob{Project: project, Cloud: cloudUUID,
		CloudInputs: store.CloudInputs{Frame: spatial.MapFrame, Origin: store.LatLon{Lat: 52.3, Lon: 7.6}}}
}

func jobOf(t *testing.T, st *bolt.Store, cloudUUID string) store.CloudJob {
	t.Helper()
	jobs, err := st.CloudJobs()
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if j.Cloud == cloudUUID {
			return j
		}
	}
	t.Fatalf("no job for %s in %+v", cloudUUID, jobs)
	return store.CloudJob{}
}

// eventually polls cond (which reads state others change) until it holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func startPool(t *testing.T, p *Pool) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Run(ctx)
	}()
	stop = func() {
		cancel()
		<-done
	}
	t.Cleanup(stop)
	return stop
}

// drained waits until the pool has worked off the queue and returns the project's
// cloud state.
func drained(t *testing.T, p *Pool, st *bolt.Store) store.CloudState {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	state, err := st.CloudState(project)
	if err != nil {
		t.Fatal(err)
	}
	return state
}

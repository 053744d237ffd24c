//go:build unix

package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gardend/gardend/server/pointcloud"
	"github.com/gardend/gardend/spatial/demo"
	"github.com/gardend/gardend/store/postgres"
	"github.com/gardend/gardend/store/postgres/pgtest"
)

// TestClusterKill runs three real gardend processes on one PostgreSQL database and,
// round after round, drives the crash test's concurrent writes at one of them, kills
// it with SIGKILL at a random moment, and checks through another node that every
// write it acknowledged is there as acknowledged (one in flight may or may not be).
// All the while the two other nodes serve a steady load of their own, which must
// never fail: a node's death is no outage. The killed node then starts again.
func TestClusterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster kill test: builds gardend and kills it; skipped with -short")
	}
	rounds := 2
	if v := os.Getenv("GARDEND_CLUSTER_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			t.Fatalf("GARDEND_CLUSTER_ROUNDS=%q: want a number from 1 to 100", v)
		}
		rounds = n
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("cluster kill test: %d rounds, seed %d", rounds, seed)
	dsn := pgtest.NewDatabase(t)
	bin := buildGardend(t)
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	nodes := make([]*gardendProc, len(dirs))
	for i, dir := range dirs {
		nodes[i] = startGardend(t, bin, dir, "--store", dsn)
	}
	rng := rand.New(rand.NewPCG(seed, 0xc1a5))
	ledger := newCrashLedger(t, rng, "") // images live in the database
	for round := 1; round <= rounds; round++ {
		v := (round - 1) % len(nodes)
		victim := nodes[v]
		var others []*gardendProc
		for i, n := range nodes {
			if i != v {
				others = append(others, n)
			}
		}
		side := startSideLoad(t, round, others)
		kill := crashKillMin + time.Duration(rng.Int64N(int64(crashKillMax-crashKillMin)))
		load := ledger.load(round, victim.base, kill, victim.kill)
		victim.waitKilled()
		// Read back through another node while the victim is still dead.
		ledger.verify(round, others[0].base)
		served := side.stop()
		if t.Failed() {
			t.Logf("round %d failed; logs of node %d:\n%s", round, (v+1)%len(nodes), others[0].logTail())
			return
		}
		t.Logf("round %d: node %d killed after %v: %s; the other nodes answered %d requests meanwhile, all of them",
			round, v, kill.Round(time.Millisecond), load, served)
		nodes[v] = startGardend(t, bin, dirs[v], "--store", dsn)
	}
	for _, n := range nodes {
		n.stop()
	}
	st, err := postgres.Open(context.Background(), dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.CheckIndexes(); err != nil {
		t.Error(err)
	}
}

// sideLoad is a steady load on the nodes that are not killed: a user of its own per
// node reading its account and creating companies, every answer checked.
type sideLoad struct {
	stopped chan struct{}
	wg      sync.WaitGroup
	served  atomic.Int64
}

func startSideLoad(t *testing.T, round int, nodes []*gardendProc) *sideLoad {
	t.Helper()
	s := &sideLoad{stopped: make(chan struct{})}
	client := &http.Client{Timeout: 10 * time.Second}
	call := func(method, url, token string, body any) (int, []byte) {
		var data []byte
		if body != nil {
			data, _ = json.Marshal(body)
		}
		req, err := http.NewRequest(method, url, bytes.NewReader(data))
		if err != nil {
			t.Error(err)
			return 0, nil
		}
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Token "+token)
		}
		res, err := client.Do(req)
		if err != nil {
			t.Errorf("%s %s on a node that was not killed: %v", method, url, err)
			return 0, nil
		}
		defer res.Body.Close()
		var buf bytes.Buffer
		buf.ReadFrom(res.Body)
		return res.StatusCode, buf.Bytes()
	}
	for i, n := range nodes {
		name := fmt.Sprintf("side-%d-%d", round, i)
		code, body := call("POST", n.base+"/register", "", map[string]string{
			"username": name, "password": "pw-of-" + name, "first_name": "S", "last_name": "L"})
		var reg struct{ Token string }
		if code != http.StatusCreated || json.Unmarshal(body, &reg) != nil {
			t.Fatalf("register on node %s: %d %s", n.base, code, body)
		}
		s.wg.Go(func() {
			for k := 0; ; k++ {
				select {
				case <-s.stopped:
					return
				default:
				}
				// Alternate nodes: what one node wrote, the other reads.
				m := nodes[(i+k)%len(nodes)]
				want, code := http.StatusOK, 0
				if k%3 == 2 {
					want = http.StatusCreated
					code, body = call("POST", m.base+"/companies", reg.Token, map[string]string{"name": fmt.Sprintf("%s-%d", name, k)})
				} else {
					code, body = call("GET", m.base+"/companies", reg.Token, nil)
					var list []struct{ ID uint64 }
					if code == http.StatusOK && (json.Unmarshal(body, &list) != nil || len(list) != k/3) {
						t.Errorf("%s: %d companies listed after %d created: %s", name, len(list), k/3, body)
						return
					}
				}
				if code != want {
					t.Errorf("%s on node %s: %d %s, want %d", name, m.base, code, body, want)
					return
				}
				s.served.Add(1)
			}
		})
	}
	return s
}

// stop ends the side load and returns how many requests it made.
func (s *sideLoad) stop() int64 {
	close(s.stopped)
	s.wg.Wait()
	return s.served.Load()
}

// TestClusterKillDuringDownloads: two gardend processes on one PostgreSQL database
// and one spatial server. Node a queues a garden's point clouds and is killed with
// SIGKILL while it downloads some of them; its claims run out after their lease and
// node b finishes the queue: every cloud gets its position, stored once, and no node
// downloads a cloud twice (a cloud is fetched at most once per node's cache).
func TestClusterKillDuringDownloads(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster kill test: builds gardend and kills it; skipped with -short")
	}
	ds := demo.Generate(demo.Options{Seed: 9, Beds: 2, Plants: 10})
	spatialSrv := demo.NewServer(ds, demo.ServerOptions{})
	addr, err := spatialSrv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer spatialSrv.Stop()
	var (
		mu        sync.Mutex
		downloads = map[string]int{} // by project
	)
	spatialSrv.SetHook(func(method, project string) (time.Duration, error) {
		if method != demo.MethodPointCloud {
			return 0, nil
		}
		mu.Lock()
		downloads[project]++
		mu.Unlock()
		return 300 * time.Millisecond, nil // long enough to be killed in the middle of
	})
	dsn := pgtest.NewDatabase(t)
	bin := buildGardend(t)
	// A 2 s lease (renewed every ~0.7 s) leaves a live node over a second of
	// scheduling slack before the other may take its downloads as abandoned.
	flags := []string{"--store", dsn, "--spatial", addr, "--pointcloud-lease", "2s"}
	a := startGardend(t, bin, t.TempDir(), flags...)
	b := startGardend(t, bin, t.TempDir(), flags...)

	client := &http.Client{Timeout: 30 * time.Second}
	call := func(method, url, token string, body any, out any) {
		t.Helper()
		data, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, url, bytes.NewReader(data))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Token "+token)
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var buf bytes.Buffer
		buf.ReadFrom(res.Body)
		if res.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %s", method, url, res.StatusCode, buf.Bytes())
		}
		if out != nil {
			json.Unmarshal(buf.Bytes(), out)
		}
	}
	var reg struct{ Token string }
	call("POST", a.base+"/register", "", map[string]string{"username": "farmer", "password": "pw-of-farmer", "first_name": "F", "last_name": "L"}, &reg)
	var c, g struct{ ID uint64 }
	call("POST", a.base+"/companies", reg.Token, map[string]string{"name": "farm"}, &c)
	call("POST", fmt.Sprintf("%s/companies/%d/gardens", a.base, c.ID), reg.Token, map[string]string{"name": "garden"}, &g)
	garden := fmt.Sprintf("/companies/%d/gardens/%d", c.ID, g.ID)
	for _, p := range ds.ProjectUUIDs() {
		call("POST", a.base+garden+"/beds", reg.Token, map[string]string{"uuid": p}, nil)
	}
	call("GET", a.base+garden+"/beds", reg.Token, nil, nil) // queues the clouds
	deadline := time.Now().Add(20 * time.Second)
	for spatialSrv.Stats().InFlight < 2 {
		if time.Now().After(deadline) {
			t.Fatal("no download in progress to interrupt")
		}
		time.Sleep(10 * time.Millisecond) // polling the spatial server's counters
	}
	a.kill()
	a.waitKilled()
	killedAt := time.Now()

	st, err := postgres.Open(context.Background(), dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for {
		jobs, err := st.CloudJobs()
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) == 0 {
			break
		}
		if time.Since(killedAt) > 30*time.Second {
			t.Fatalf("node b did not finish the queue: %+v", jobs)
		}
		time.Sleep(100 * time.Millisecond) // polling the shared queue
	}
	took := time.Since(killedAt)
	b.stop()
	total := 0
	mu.Lock()
	defer mu.Unlock()
	for _, p := range ds.ProjectUUIDs() {
		state, err := st.CloudState(p)
		if err != nil {
			t.Fatal(err)
		}
		clouds := len(state.Positions)
		total += clouds
		// Whatever a killed node had in hand was fetched again by the other, once.
		if clouds == 0 || downloads[p] < clouds || downloads[p] > 2*clouds {
			t.Errorf("project %s: %d positions, %d downloads", p, clouds, downloads[p])
		}
	}
	sum := 0
	for _, n := range downloads {
		sum += n
	}
	// At most what node a had in hand (its two workers) was fetched twice.
	if sum > total+pointcloud.DefaultWorkers {
		t.Errorf("%d downloads for %d clouds: more than node a's %d interrupted ones fetched again", sum, total, pointcloud.DefaultWorkers)
	}
	if err := st.CheckIndexes(); err != nil {
		t.Error(err)
	}
	t.Logf("%d clouds positioned; node b finished the queue %v after node a was killed; downloads %v", total, took.Round(time.Millisecond), downloads)
}

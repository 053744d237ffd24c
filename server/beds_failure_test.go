package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/demo"
)

func noCache(cfg *server.Config) { cfg.Spatial.CacheTTL = spatial.CacheDisabled }

// TestBedsStreamSpatialDown: a stopped, slow or failing spatial server turns beds into
// error lines within the call deadline, the stream goes on to the end; the plants
// endpoint answers 502.
func TestBedsStreamSpatialDown(t *testing.T) {
	const timeout = 500 * time.Millisecond
	ss := newSpatialSetup(t, demo.Options{Seed: 3, Beds: 3, Plants: 8}, demo.ServerOptions{}, noCache,
		func(cfg *server.Config) { cfg.Spatial.CallTimeout = timeout })
	uuids := ss.ds.ProjectUUIDs()

	// One failing and one slow project: their lines are errors, the third bed is fine.
	ss.demo.FailProject(uuids[0], codes.Internal)
	ss.demo.SetProjectLatency(uuids[1], 10*time.Second)
	start := time.Now()
	lines := ss.g.streamBeds(ss.garden, ss.token)
	took := time.Since(start)
	if len(lines) != 3 || lines[0].Error == "" || lines[1].Error == "" || lines[2].Error != "" {
		t.Fatalf("lines %+v", lines)
	}
	for i, l := range lines[:2] {
		if l.ID != ss.beds[i] || l.Plants != ss.plantsURL(i) || len(l.keys) != 6 || !l.has("name") || !l.has("avg_plant_lat") || !l.has("avg_plant_lon") {
			t.Errorf("error line %d: %+v", i, l)
		}
		if !strings.Contains(l.Error, uuids[i]) || strings.Contains(l.Error, ss.demo.Addr()) {
			t.Errorf("error %q should name the project, not the server's address", l.Error)
		}
	}
	if !strings.Contains(lines[1].Error, "no answer within") {
		t.Errorf("slow bed: %q", lines[1].Error)
	}
	// Two attempts of the details call at most, each with its deadline.
	if took > 4*timeout+time.Second {
		t.Errorf("stream took %v with a call deadline of %v", took, timeout)
	}

	// The server gone: every bed is an error line, and fast.
	ss.demo.Stop()
	start = time.Now()
	lines = ss.g.streamBeds(ss.garden, ss.token)
	if len(lines) != 3 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, l := range lines {
		if !strings.Contains(l.Error, "spatial server unavailable") {
			t.Errorf("bed %d: error %q", l.ID, l.Error)
		}
	}
	if took := time.Since(start); took > 2*timeout+time.Second {
		t.Errorf("stream took %v with the server down", took)
	}
	code, body := ss.g.call("GET", ss.garden+"/beds/"+u64(ss.beds[2])+"/plants", ss.token, nil)
	var p struct {
		Status int
		Detail string
	}
	json.Unmarshal(body, &p)
	if code != http.StatusBadGateway || p.Status != 502 || !strings.Contains(p.Detail, "unavailable") {
		t.Fatalf("plants with the server down: %d %s", code, body)
	}
}

// expectedColdCalls is what reading a bed costs when nothing is cached, by method:
// details once, a measurement per plant, an instance per instance label, each distinct
// class and each distinct non-map frame of a plant's cloud once.
func expectedColdCalls(ds *demo.Dataset) map[string]int64 {
	w := map[string]int64{}
	for _, b := range ds.Beds {
		w[mDetails]++
		meas := map[string]bool{}
		classes, frames := map[string]bool{}, map[string]bool{}
		for _, g := range b.Geometries {
			if g.Type != demo.TypeMeasurement || meas[g.Name] {
				continue
			}
			meas[g.Name] = true
			w[mMeasurement]++
			if len(g.Labels) > 0 {
				w[mInstance]++
			}
			if len(g.Labels) > 1 {
				classes[g.Labels[1]] = true
			}
		}
		for _, g := range b.Geometries {
			if g.Type == demo.TypePointCloud && meas[g.Name] && g.FrameID != demo.FrameMap && g.FrameID != "" {
				frames[g.FrameID] = true
			}
		}
		w[mClass] += int64(len(classes))
		w[mTransform] += int64(len(frames))
	}
	return w
}

// TestBedsStreamTwoRoundTrips: with latency on every call, the stream costs each call
// once and sends everything after the details at once: about two round trips. The
// demo server's counts and its highest concurrency show it, not the wall clock: calls
// after the details wait at a barrier until all of them have arrived, which only a
// client that sends them together passes (one that does not times out).
func TestBedsStreamTwoRoundTrips(t *testing.T) {
	ss := newSpatialSetup(t, demo.Options{Seed: 5, Beds: 4, Plants: 12}, demo.ServerOptions{},
		func(cfg *server.Config) { cfg.Spatial.MaxInFlight, cfg.Spatial.CallTimeout = 1024, 10*time.Second })
	want := expectedColdCalls(ss.ds)
	var second int64
	for m, n := range want {
		if m != mDetails {
			second += n
		}
	}
	var (
		mu      sync.Mutex
		arrived int64
		all     = make(chan struct{})
	)
	ss.demo.SetHook(func(method, _ string) (time.Duration, error) {
		if method == mDetails || method == mCloud {
			return 0, nil
		}
		mu.Lock()
		if arrived++; arrived == second {
			close(all)
		}
		mu.Unlock()
		<-all
		return 0, nil
	})
	ss.demo.SetLatency(30 * time.Millisecond)
	ss.demo.ResetStats()
	lines := ss.g.streamBeds(ss.garden, ss.token)
	for _, l := range lines {
		if l.Error != "" {
			t.Fatalf("bed %d: %s", l.ID, l.Error)
		}
	}
	st := ss.demo.Stats()
	for m, n := range want {
		if st.Calls[m] != n {
			t.Errorf("%s: %d calls, want %d", m, st.Calls[m], n)
		}
	}
	if st.MaxInFlight < int(second) {
		t.Errorf("at most %d calls at once, want the %d after the details", st.MaxInFlight, second)
	}

	// Warm: nothing asked again.
	ss.demo.ResetStats()
	ss.g.streamBeds(ss.garden, ss.token)
	if n := ss.demo.Stats().Calls; n[mDetails]+n[mMeasurement]+n[mInstance]+n[mClass]+n[mTransform] != 0 {
		t.Errorf("warm stream called the server: %v", n)
	}
}

// TestBedsStreamClientCancel: a client that goes away mid-stream cancels the calls
// still outstanding (the demo server sees them cancelled) and leaves no goroutine.
func TestBedsStreamClientCancel(t *testing.T) {
	ss := newSpatialSetup(t, demo.Options{Seed: 3, Beds: 3, Plants: 8}, demo.ServerOptions{}, noCache)
	tr := &http.Transport{}
	client := &http.Client{Transport: tr}
	stream := func(ctx context.Context) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, "GET", ss.g.base+ss.garden+"/beds", nil)
		req.Header.Set("Authorization", "Token "+ss.token)
		return client.Do(req)
	}
	// Warm up connections and let the downloads finish, then count.
	res, err := stream(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	readBedLines(t, res.Body)
	res.Body.Close()
	ss.g.waitClouds()
	tr.CloseIdleConnections()
	base := settledGoroutines(0, time.Second)

	ss.demo.ResetStats()
	ss.demo.SetProjectLatency(ss.ds.Beds[1].ProjectUUID, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	res, err = stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(res.Body).ReadString('\n')
	if err != nil || !strings.Contains(line, `"id":`+u64(ss.beds[0])) {
		t.Fatalf("first line %q: %v", line, err)
	}
	// The slow bed's call must have reached the server for it to be cancelled there.
	eventually(t, "the slow bed's call to reach the demo server", func() bool { return ss.demo.Stats().InFlight > 0 })
	cancel()
	res.Body.Close()
	tr.CloseIdleConnections()
	eventually(t, "the demo server to see the calls cancelled", func() bool {
		st := ss.demo.Stats()
		return st.Cancelled > 0 && st.InFlight == 0
	})
	if n := settledGoroutines(base, 10*time.Second); n > base {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines, %d before the stream:\n%s", n, base, buf[:runtime.Stack(buf, true)])
	}
}

// settledGoroutines waits up to d for the goroutine count to reach at most want (or,
// with want 0, to stop changing) and returns it.
func settledGoroutines(want int, d time.Duration) int {
	deadline := time.Now().Add(d)
	n := runtime.NumGoroutine()
	for time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		m := runtime.NumGoroutine()
		if want > 0 && m <= want || want == 0 && m == n {
			return m
		}
		n = m
	}
	return n
}

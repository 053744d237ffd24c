package spatial_test

import (
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/demo"
)

// Method names counted on the demo server.
const (
	mDetails     = demo.MethodProjectDetails
	mMeasurement = demo.MethodMeasurement
	mInstance    = demo.MethodInstance
	mClass       = demo.MethodClass
	mTransform   = demo.MethodTransform
	mCloud       = demo.MethodPointCloud
)

// startDemo serves ds on a free loopback port for the test's duration.
func startDemo(tb testing.TB, ds *demo.Dataset, so demo.ServerOptions) *demo.Server {
	tb.Helper()
	srv := demo.NewServer(ds, so)
	if _, err := srv.Start("127.0.0.1:0"); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(srv.Stop)
	return srv
}

// dial connects a client to addr; cfg.Addr is filled in.
func dial(tb testing.TB, addr string, cfg spatial.ClientConfig) *spatial.Client {
	tb.Helper()
	cfg.Addr = addr
	c, err := spatial.Dial(cfg, testLogger(tb))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

func testLogger(tb testing.TB) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(tb)).Level(zerolog.WarnLevel)
}

// dataset is the tests' garden, with the default 33 plants per bed; tests ask for the
// beds they need (bed i is the same whatever the count), as generating costs time
// under the race detector.
func dataset(beds int) *demo.Dataset { return demo.Generate(demo.Options{Seed: 7, Beds: beds}) }

// wantCalls is what one cold Bed costs per method: details once, a measurement per
// plant, an instance per instance label, each distinct class and non-map frame once.
func wantCalls(b *demo.Bed) map[string]int64 {
	w := map[string]int64{mDetails: 1}
	insts, classes, frames := map[string]bool{}, map[string]bool{}, map[string]bool{}
	meas := map[string]demo.Geometry{}
	for _, g := range b.Geometries {
		if g.Type == demo.TypeMeasurement {
			meas[g.Name] = g
		}
	}
	for _, g := range b.Geometries {
		switch g.Type {
		case demo.TypeMeasurement:
			w[mMeasurement]++
			if len(g.Labels) > 0 {
				insts[g.Labels[0]] = true
			}
			if len(g.Labels) > 1 {
				classes[g.Labels[1]] = true
			}
		case demo.TypePointCloud:
			if _, isPlant := meas[g.Name]; isPlant && g.FrameID != demo.FrameMap {
				frames[g.FrameID] = true
			}
		}
	}
	w[mInstance], w[mClass], w[mTransform] = int64(len(insts)), int64(len(classes)), int64(len(frames))
	return w
}

// diffBed explains how got differs from want, plant by plant.
func diffBed(got, want spatial.Bed) string {
	var b strings.Builder
	if got.ProjectUUID != want.ProjectUUID || got.Name != want.Name || got.Origin != want.Origin {
		fmt.Fprintf(&b, "bed: got %q %q %v, want %q %q %v\n", got.ProjectUUID, got.Name, got.Origin, want.ProjectUUID, want.Name, want.Origin)
	}
	if len(got.Plants) != len(want.Plants) {
		fmt.Fprintf(&b, "got %d plants, want %d\n", len(got.Plants), len(want.Plants))
	}
	for i := 0; i < min(len(got.Plants), len(want.Plants)); i++ {
		if !reflect.DeepEqual(got.Plants[i], want.Plants[i]) {
			fmt.Fprintf(&b, "plant %d:\n got  %s\n want %s\n", i, plantString(got.Plants[i]), plantString(want.Plants[i]))
		}
	}
	return b.String()
}

func plantString(p spatial.Plant) string {
	f := func(v *float64) string {
		if v == nil {
			return "nil"
		}
		return fmt.Sprint(*v)
	}
	t := "nil"
	if p.PlantedAt != nil {
		t = p.PlantedAt.Format(time.RFC3339)
	}
	c := "nil"
	if p.Cloud != nil {
		c = fmt.Sprintf("{%s %s %v}", p.Cloud.UUID, p.Cloud.FrameID, p.Cloud.Transform)
	}
	return fmt.Sprintf("%s id=%s measurement=%s@%s %s/%s hum=%s yield=%s growth=%s planted=%s health=%v status=%q cloud=%s",
		p.Name, p.ID, p.Measurement, p.MeasuredAt.Format(time.RFC3339Nano), p.Species, p.Variety, f(p.Humidity), f(p.Yield), f(p.GrowthState), t, p.Health, p.Status, c)
}

// settleGoroutines waits until the goroutine count is back to at most base.
func settleGoroutines(tb testing.TB, base int) {
	tb.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			tb.Fatalf("goroutines: %d, want <= %d\n%s", runtime.NumGoroutine(), base, buf[:n])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// eventually polls cond for up to 15 seconds.
func eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	// Generous: a loaded CI machine under -race is slow, and only failures wait it out.
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// holdUntil returns a demo server hook that holds every call of the methods it is
// given (all methods when none) until n such calls are on the server at once, then
// lets them all through. A call waits at most 10 s, so a client that never sends n
// at once shows as fewer in flight rather than a hung test.
func holdUntil(n int, methods ...string) func(method, project string) (time.Duration, error) {
	var mu sync.Mutex
	arrived, all := 0, make(chan struct{})
	return func(method, _ string) (time.Duration, error) {
		if len(methods) > 0 && !slices.Contains(methods, method) {
			return 0, nil
		}
		mu.Lock()
		if arrived++; arrived == n {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
		case <-time.After(10 * time.Second):
		}
		return 0, nil
	}
}

// perPlantMethods are the calls of a bed's second round.
var perPlantMethods = []string{mMeasurement, mInstance, mClass, mTransform}

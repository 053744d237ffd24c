package spatial_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/demo"
)

// TestMeasurementUpdatedInPlace: a robot that updates a measurement in place (the
// same geometry uuid, a newer stamp) is read with its new values as soon as the
// project's details show the new stamp, even while an answer for the old stamp is
// still cached: history keyed by (uuid, stamp) must never pair a new stamp with old
// values. Here the measurements are cached 20 s after the details (the first read
// failed half-way), so when the details expire the old measurements are still fresh.
func TestMeasurementUpdatedInPlace(t *testing.T) {
	ds := demo.Generate(demo.Options{Seed: 3, Beds: 1, Plants: 4})
	sim := demo.NewSimulation(ds)
	t0 := time.Date(2026, 11, 20, 6, 0, 0, 0, time.UTC)
	first := demo.Dataset{Beds: sim.Scan(t0)}
	srv := startDemo(t, &first, demo.ServerOptions{})
	var (
		mu    sync.Mutex
		clock = t0
	)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	c := dial(t, srv.Addr(), spatial.ClientConfig{Now: now, CacheTTL: 30 * time.Second})
	project := ds.Beds[0].ProjectUUID
	ctx := context.Background()

	srv.SetHook(func(method, _ string) (time.Duration, error) {
		if method == mMeasurement {
			return 0, status.Error(codes.Internal, "disk hiccup")
		}
		return 0, nil
	})
	if _, err := c.Bed(ctx, project); err == nil {
		t.Fatal("the first read should fail on its measurements")
	}
	srv.SetHook(nil)
	advance(20 * time.Second)
	if _, err := c.Bed(ctx, project); err != nil { // details from the cache, measurements cached now
		t.Fatal(err)
	}
	// The robot scans again: same uuids, newer stamps, new values.
	t1 := t0.Add(12 * time.Hour)
	second := demo.Dataset{Beds: sim.Scan(t1)}
	srv.SetBed(second.Beds[0])
	advance(15 * time.Second) // the details expired, the measurements not yet
	got, err := c.Bed(ctx, project)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := second.WantBed(project)
	if d := diffBed(got, want); d != "" {
		t.Fatalf("after an in-place update:\n%s", d)
	}
	for _, p := range got.Plants {
		if !p.MeasuredAt.Equal(t1) {
			t.Errorf("%s measured at %v, want %v", p.Name, p.MeasuredAt, t1)
		}
	}
	if errors.Is(err, spatial.ErrNotFound) {
		t.Fatal(err)
	}
}

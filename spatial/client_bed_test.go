package spatial_test

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/demo"
)

func TestBedMatchesDataset(t *testing.T) {
	ds := dataset(6)
	srv := startDemo(t, ds, demo.ServerOptions{})
	c := dial(t, srv.Addr(), spatial.ClientConfig{})
	for _, b := range ds.Beds {
		t.Run(b.Name, func(t *testing.T) {
			got, err := c.Bed(context.Background(), b.ProjectUUID)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := ds.WantBed(b.ProjectUUID)
			if d := diffBed(got, want); d != "" {
				t.Error(d)
			}
			if !sort.SliceIsSorted(got.Plants, func(i, j int) bool { return got.Plants[i].Name < got.Plants[j].Name }) {
				t.Error("plants not sorted by name")
			}
			if len(got.Plants) != len(b.Plants) {
				t.Errorf("%d plants, want %d", len(got.Plants), len(b.Plants))
			}
		})
	}
}

// TestBedOddities checks, value by value, the deliberate oddities of bed 0 and 1
// (see demo.Generate) without going through WantBed.
func TestBedOddities(t *testing.T) {
	ds := dataset(2)
	srv := startDemo(t, ds, demo.ServerOptions{})
	c := dial(t, srv.Addr(), spatial.ClientConfig{})
	bed0, err := c.Bed(context.Background(), ds.Beds[0].ProjectUUID)
	if err != nil {
		t.Fatal(err)
	}
	bed1, err := c.Bed(context.Background(), ds.Beds[1].ProjectUUID)
	if err != nil {
		t.Fatal(err)
	}
	plant := func(b spatial.Bed, name string) spatial.Plant {
		for _, p := range b.Plants {
			if p.Name == name {
				return p
			}
		}
		t.Fatalf("no plant %s", name)
		return spatial.Plant{}
	}
	raw := func(b *demo.Bed, name string) map[string]any {
		for _, p := range b.Plants {
			if p.Name == name {
				return b.Measurements[p.MeasurementUUID]
			}
		}
		return nil
	}
	tests := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"humidity sent as int64", func(t *testing.T) {
			if h := plant(bed0, "plant_006").Humidity; h == nil || *h != 0 {
				t.Errorf("humidity = %v, want 0 (present)", h)
			}
		}},
		{"yield sent as int64", func(t *testing.T) {
			if y := plant(bed0, "plant_010").Yield; y == nil || *y != 3 {
				t.Errorf("yield = %v, want 3", y)
			}
		}},
		{"health levels as double and uint64", func(t *testing.T) {
			h := plant(bed0, "plant_012").Health
			if len(h) < 2 || h[0] != (spatial.Health{Type: "water", Level: 2}) || h[1] != (spatial.Health{Type: "nutrients", Level: 4}) {
				t.Errorf("health = %v", h)
			}
		}},
		{"growth_state as string is missing", func(t *testing.T) {
			if g := plant(bed0, "plant_014").GrowthState; g != nil {
				t.Errorf("growth = %v, want nil", *g)
			}
		}},
		{"health type without level gives no entry", func(t *testing.T) {
			m := raw(&ds.Beds[0], "plant_016")
			if _, ok := m["health_2_level"]; ok || m["health_2_type"] != "diseases" {
				t.Fatalf("dataset changed: %v", m)
			}
			pairs := 0
			for _, i := range []string{"0", "1"} {
				_, okT := m["health_"+i+"_type"]
				_, okL := m["health_"+i+"_level"]
				if okT && okL {
					pairs++
				}
			}
			if h := plant(bed0, "plant_016").Health; len(h) != pairs {
				t.Errorf("health %v, want %d entries", h, pairs)
			}
		}},
		{"no labels: values but no species", func(t *testing.T) {
			name := ds.Beds[0].Plants[len(ds.Beds[0].Plants)-2].Name
			p := plant(bed0, name)
			if p.Species != "" || p.Variety != "" || p.PlantedAt != nil {
				t.Errorf("species %q variety %q planted %v, want none", p.Species, p.Variety, p.PlantedAt)
			}
			m := raw(&ds.Beds[0], name)
			if v, ok := m["status"]; ok && p.Status != v {
				t.Errorf("status %q, want %q", p.Status, v)
			}
			if v, ok := m["humidity"].(float64); ok && (p.Humidity == nil || *p.Humidity != v) {
				t.Errorf("humidity %v, want %v", p.Humidity, v)
			}
		}},
		{"instance label only: species, no variety", func(t *testing.T) {
			p := plant(bed0, "plant_008")
			if p.Species == "" || p.Variety != "" {
				t.Errorf("species %q variety %q", p.Species, p.Variety)
			}
		}},
		{"frame without transform", func(t *testing.T) {
			p := plant(bed1, "plant_005")
			if p.Cloud == nil || p.Cloud.FrameID != "drone_cam" || p.Cloud.Transform != nil {
				t.Errorf("cloud = %+v, want drone_cam without transform", p.Cloud)
			}
		}},
		{"map frame has nil transform, others a transform", func(t *testing.T) {
			var inMap, other int
			for _, p := range append(bed0.Plants, bed1.Plants...) {
				switch {
				case p.Cloud == nil:
				case p.Cloud.FrameID == "map":
					inMap++
					if p.Cloud.Transform != nil {
						t.Errorf("%s: map cloud with transform", p.Name)
					}
				case p.Cloud.FrameID != "drone_cam":
					other++
					if p.Cloud.Transform == nil {
						t.Errorf("%s: frame %s without transform", p.Name, p.Cloud.FrameID)
					}
				}
			}
			if inMap == 0 || other == 0 {
				t.Errorf("map clouds %d, other %d: the dataset should have both", inMap, other)
			}
		}},
		{"image geometries ignored", func(t *testing.T) {
			if p := plant(bed0, "plant_003"); p.ID != ds.Beds[0].Plants[2].MeasurementUUID {
				t.Errorf("plant_003 id %s, want the measurement's", p.ID)
			}
			for _, p := range bed0.Plants {
				if p.Name == "overview" {
					t.Error("image geometry became a plant")
				}
			}
		}},
		{"plants without clouds", func(t *testing.T) {
			n := 0
			for _, p := range bed0.Plants {
				if p.Cloud == nil {
					n++
				}
			}
			if want := len(bed0.Plants) - len(ds.Beds[0].Clouds); n != want {
				t.Errorf("%d plants without cloud, want %d", n, want)
			}
		}},
		{"origin from geolocation", func(t *testing.T) {
			if bed0.Origin != ds.Beds[0].Geolocation || bed0.Name != "Bed 1" {
				t.Errorf("origin %v name %q", bed0.Origin, bed0.Name)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}

// TestBedDedupe: classes and transforms are shared by many plants and fetched once.
func TestBedDedupe(t *testing.T) {
	ds := dataset(4)
	srv := startDemo(t, ds, demo.ServerOptions{})
	c := dial(t, srv.Addr(), spatial.ClientConfig{CacheTTL: spatial.CacheDisabled})
	for _, b := range ds.Beds {
		srv.ResetStats()
		if _, err := c.Bed(context.Background(), b.ProjectUUID); err != nil {
			t.Fatal(err)
		}
		got, want := srv.Stats().Calls, wantCalls(&b)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: calls %v, want %v", b.Name, got, want)
		}
		if want[mClass] >= int64(len(b.Plants))/2 || want[mTransform] > 5 {
			t.Errorf("%s: the dataset should share classes and frames: %v", b.Name, want)
		}
	}
}

// TestBedColdCost: a cold bed costs two rounds, the details and then every per-plant
// call in flight at once; a second read is served from the cache.
func TestBedColdCost(t *testing.T) {
	ds := dataset(2)
	b := &ds.Beds[0]
	srv := startDemo(t, ds, demo.ServerOptions{})
	c := dial(t, srv.Addr(), spatial.ClientConfig{MaxInFlight: 256})
	// Open the connection first: its handshake is not a round trip of the protocol.
	if _, err := c.Bed(context.Background(), ds.Beds[1].ProjectUUID); err != nil {
		t.Fatal(err)
	}
	perPlant := 0
	for m, n := range wantCalls(b) {
		if m != mDetails {
			perPlant += int(n)
		}
	}
	// The server holds every per-plant call until all of them have arrived: only a
	// client that sends them all at once gets past this barrier before its timeout.
	srv.SetHook(holdUntil(perPlant, perPlantMethods...))
	defer srv.SetHook(nil)
	srv.ResetStats()

	if _, err := c.Bed(context.Background(), b.ProjectUUID); err != nil {
		t.Fatal(err)
	}
	st := srv.Stats()
	if st.MaxInFlight != perPlant {
		t.Errorf("at most %d calls at once on the server, want all %d per-plant calls", st.MaxInFlight, perPlant)
	}
	if got, want := st.Calls, wantCalls(b); !reflect.DeepEqual(got, want) {
		t.Errorf("calls %v, want %v", got, want)
	}

	if _, err := c.Bed(context.Background(), b.ProjectUUID); err != nil {
		t.Fatal(err)
	}
	// What the cache saves is the calls; the wall time is BenchmarkBed's to measure.
	if got := srv.Stats().Calls; !reflect.DeepEqual(got, st.Calls) {
		t.Errorf("warm bed made calls: %v, before %v", got, st.Calls)
	}
	if cs := c.Stats(); cs.CacheHits != int64(1+perPlant) || cs.MaxInFlight < perPlant || cs.InFlight != 0 {
		t.Errorf("client stats %+v", cs)
	}
}

func TestBedCacheExpiry(t *testing.T) {
	ds := demo.Generate(demo.Options{Seed: 7, Beds: 1, Plants: 12})
	b := ds.Beds[0]
	srv := startDemo(t, ds, demo.ServerOptions{})
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	tests := []struct {
		name      string
		ttl       time.Duration
		advance   time.Duration
		wantCalls int64 // GetProjectDetails after two reads
	}{
		{"within ttl", 10 * time.Second, 9 * time.Second, 1},
		{"expired", 10 * time.Second, 10 * time.Second, 2},
		{"disabled", spatial.CacheDisabled, 0, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dial(t, srv.Addr(), spatial.ClientConfig{CacheTTL: tt.ttl, Now: clock})
			srv.ResetStats()
			for i := 0; i < 2; i++ {
				if _, err := c.Bed(context.Background(), b.ProjectUUID); err != nil {
					t.Fatal(err)
				}
				advance(tt.advance)
			}
			calls := srv.Stats().Calls
			if calls[mDetails] != tt.wantCalls || calls[mMeasurement] != tt.wantCalls*int64(len(b.Plants)) {
				t.Errorf("calls %v, want %d rounds", calls, tt.wantCalls)
			}
		})
	}
}

// TestBedCollapsesConcurrentCalls: identical Bed calls at the same time cost the
// server what one costs.
func TestBedCollapsesConcurrentCalls(t *testing.T) {
	ds := dataset(4)
	b := &ds.Beds[3]
	srv := startDemo(t, ds, demo.ServerOptions{})
	// The server holds the first call until every reader has joined it, so the
	// readers overlap however the goroutines are scheduled.
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	var freeOnce sync.Once
	free := func() { freeOnce.Do(func() { close(release) }) }
	t.Cleanup(free) // a failed wait must not leave the server's handler blocked
	srv.SetHook(func(method, _ string) (time.Duration, error) {
		if method == mDetails {
			arrived <- struct{}{}
			<-release
		}
		return 0, nil
	})
	c := dial(t, srv.Addr(), spatial.ClientConfig{})
	var wg sync.WaitGroup
	beds := make([]spatial.Bed, 8)
	errs := make([]error, len(beds))
	for i := range beds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			beds[i], errs[i] = c.Bed(context.Background(), b.ProjectUUID)
		}()
	}
	<-arrived
	eventually(t, "every reader joined the first call", func() bool { return c.Stats().Collapsed == int64(len(beds)-1) })
	free()
	wg.Wait()
	for i := range beds {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if !reflect.DeepEqual(beds[i], beds[0]) {
			t.Errorf("bed %d differs", i)
		}
	}
	if got, want := srv.Stats().Calls, wantCalls(b); !reflect.DeepEqual(got, want) {
		t.Errorf("calls %v, want %v", got, want)
	}
	if got := c.Stats().Collapsed; got < int64(len(beds)-1) {
		t.Errorf("%d callers joined a call in flight, want at least %d", got, len(beds)-1)
	}
}

func TestBedMaxInFlight(t *testing.T) {
	ds := demo.Generate(demo.Options{Seed: 7, Beds: 2, Plants: 12})
	srv := startDemo(t, ds, demo.ServerOptions{Latency: 5 * time.Millisecond})
	// The first per-plant calls wait until four are on the server at once, so the
	// cap is reached however the goroutines are scheduled; a fifth is never let in.
	srv.SetHook(holdUntil(4, perPlantMethods...))
	c := dial(t, srv.Addr(), spatial.ClientConfig{MaxInFlight: 4})
	for r := range c.Beds(context.Background(), ds.ProjectUUIDs()[:2]) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	if got := srv.Stats().MaxInFlight; got != 4 {
		t.Errorf("server saw %d at once, want 4", got)
	}
	if got := c.Stats().MaxInFlight; got != 4 {
		t.Errorf("client MaxInFlight %d, want 4", got)
	}
}

func TestBedErrors(t *testing.T) {
	ds := dataset(3)
	srv := startDemo(t, ds, demo.ServerOptions{})
	c := dial(t, srv.Addr(), spatial.ClientConfig{CallTimeout: 200 * time.Millisecond, Attempts: 1})
	tests := []struct {
		name    string
		project string
		setup   func()
		is      error
		in      []string // parts of the message
	}{
		{"unknown project", "no-such-project", func() {}, spatial.ErrNotFound,
			[]string{"GetProjectDetails", "no-such-project", "not found"}},
		{"unavailable", ds.Beds[1].ProjectUUID, func() { srv.FailProject(ds.Beds[1].ProjectUUID, 14) }, spatial.ErrUnavailable,
			[]string{"GetProjectDetails", ds.Beds[1].ProjectUUID, "unavailable"}},
		{"too slow", ds.Beds[2].ProjectUUID, func() { srv.SetProjectLatency(ds.Beds[2].ProjectUUID, time.Second) }, spatial.ErrUnavailable,
			[]string{"GetProjectDetails", "no answer within 200ms"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.setup()
			start := time.Now()
			_, err := c.Bed(context.Background(), tt.project)
			if !errors.Is(err, tt.is) {
				t.Fatalf("err = %v, want %v", err, tt.is)
			}
			for _, s := range tt.in {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%q does not say %q", err, s)
				}
			}
			if strings.Contains(err.Error(), "127.0.0.1") {
				t.Errorf("%q leaks the server address", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// TestBedPartialNotFound: a class or transform the server lost leaves values missing
// instead of failing the bed.
func TestBedPartialNotFound(t *testing.T) {
	ds := dataset(1)
	b := &ds.Beds[0]
	var lostClass string
	for uuid := range b.Classes {
		lostClass = uuid
		break
	}
	delete(b.Classes, lostClass)
	srv := startDemo(t, ds, demo.ServerOptions{})
	c := dial(t, srv.Addr(), spatial.ClientConfig{})
	got, err := c.Bed(context.Background(), b.ProjectUUID)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := ds.WantBed(b.ProjectUUID)
	if d := diffBed(got, want); d != "" {
		t.Error(d)
	}
	n := 0
	for _, p := range got.Plants {
		if p.Species != "" && p.Variety == "" {
			n++
		}
	}
	if n == 0 {
		t.Error("no plant lost its variety")
	}
}

// TestBedCachesNotFound: answers the server gave as NotFound (here a frame without a
// transform) are cached like answers, so a warm read costs no call at all.
func TestBedCachesNotFound(t *testing.T) {
	ds := dataset(2)
	b := &ds.Beds[1] // has a cloud in a frame without a transform
	srv := startDemo(t, ds, demo.ServerOptions{})
	c := dial(t, srv.Addr(), spatial.ClientConfig{})
	for round := range 2 {
		srv.ResetStats()
		if _, err := c.Bed(context.Background(), b.ProjectUUID); err != nil {
			t.Fatal(err)
		}
		calls := srv.Stats().Calls
		if round == 1 && len(calls) != 0 {
			t.Errorf("warm read called %v", calls)
		}
	}
}

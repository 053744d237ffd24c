package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/demo"
)

// madeUpUUID is a well-formed project uuid no spatial server knows.
func madeUpUUID(i int) string { return fmt.Sprintf("0badbed0-0000-4000-8000-%012d", i) }

// A garden may have --max-beds-per-garden beds through the API; one more is a 400
// that says what to do. A garden that has more already keeps them and still lists.
func TestBedsPerGardenLimit(t *testing.T) {
	ss := newSpatialSetup(t, demo.Options{Seed: 3, Beds: 2, Plants: 3}, demo.ServerOptions{},
		func(cfg *server.Config) { cfg.MaxBedsPerGarden = 3 })
	// The setup registered 2 beds; one more fits.
	ss.g.must(201, "POST", ss.garden+"/beds", ss.token, map[string]string{"uuid": madeUpUUID(0)})
	code, body := ss.g.call("POST", ss.garden+"/beds", ss.token, map[string]string{"uuid": madeUpUUID(1)})
	var p struct{ Detail string }
	json.Unmarshal(body, &p)
	if code != http.StatusBadRequest || !strings.Contains(p.Detail, "has 3 beds, the most a garden may have") ||
		!strings.Contains(p.Detail, "--max-beds-per-garden") {
		t.Fatalf("4th bed: %d %s", code, body)
	}
	// Another garden has its own count.
	other := ss.g.gardenWithBeds(ss.token, []string{madeUpUUID(1)})
	// A garden over the limit (made before it, or by the operator's `beds add`) lists
	// all its beds.
	if _, err := ss.g.srv.Store().CreateBed(other.garden, madeUpUUID(2), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := ss.g.srv.Store().CreateBed(other.garden, madeUpUUID(3), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := ss.g.srv.Store().CreateBed(other.garden, madeUpUUID(4), ""); err != nil {
		t.Fatal(err)
	}
	if lines := ss.g.streamBeds(other.path, ss.token); len(lines) != 4 {
		t.Fatalf("%d lines for a garden of 4 beds", len(lines))
	}
	ss.g.must(200, "DELETE", other.path+"/beds/"+u64(other.beds[0]), ss.token, nil)
	if code, _ := ss.g.call("POST", other.path+"/beds", ss.token, map[string]string{"uuid": madeUpUUID(5)}); code != http.StatusBadRequest {
		t.Fatalf("a garden still at the limit after a removal: %d", code)
	}
}

// BenchmarkTenantBedsUnderHostileGarden measures a tenant's cold listing of the seed's
// garden (6 beds × 33 plants, 30 ms per spatial call) alone and while hostile gardens
// of thousands of made-up bed uuids are listed over and over (their beds made through
// the store: what a garden had before --max-beds-per-garden, or what an operator
// added). "hostile" is one such garden of 4000 beds listed by two clients at once;
// "hostile-x3" three gardens of 1500, each listed by two clients. Setting up writes
// the beds one transaction each: about a minute. Run with -benchtime 5x.
func BenchmarkTenantBedsUnderHostileGarden(b *testing.B) {
	ds := demo.Generate(demo.Options{})
	for _, bc := range []struct {
		name     string
		gardens  int
		madeUpOf int
	}{{"alone", 0, 0}, {"hostile", 1, 4000}, {"hostile-x3", 3, 1500}} {
		b.Run(bc.name, func(b *testing.B) {
			so := startDemoSpatial(b, ds, demo.ServerOptions{})
			g := startGardend(b, server.Config{
				Now:     func() time.Time { return ds.Now },
				Spatial: spatial.ClientConfig{Addr: so.Addr(), CacheTTL: spatial.CacheDisabled},
			})
			token := g.register("tenant")
			victim := g.gardenWithBeds(token, ds.ProjectUUIDs()).path
			g.streamBeds(victim, token)
			g.waitClouds()
			so.SetLatency(30 * time.Millisecond)

			attacker := g.register("attacker")
			var hostile []string
			for i := range bc.gardens {
				f := g.gardenWithBeds(attacker, nil)
				for j := range bc.madeUpOf {
					if _, err := g.srv.Store().CreateBed(f.garden, madeUpUUID(i*bc.madeUpOf+j), ""); err != nil {
						b.Fatal(err)
					}
				}
				hostile = append(hostile, f.path)
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for _, path := range append(hostile, hostile...) {
				wg.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
						g.streamBeds(path, attacker)
					}
				})
			}
			if len(hostile) > 0 {
				// Let the hostile listings fill the call slots first.
				deadline := time.Now().Add(5 * time.Second)
				for st, _ := g.srv.SpatialStats(); st.InFlight < 100 && time.Now().Before(deadline); st, _ = g.srv.SpatialStats() {
					time.Sleep(5 * time.Millisecond)
				}
			}
			var last time.Duration
			b.ResetTimer()
			for range b.N {
				_, l := timeStream(b, g, victim+"/beds", token, len(ds.Beds))
				last += l
			}
			b.StopTimer()
			close(stop)
			wg.Wait()
			b.ReportMetric(float64(last.Microseconds())/1000/float64(b.N), "ms/tenant-listing")
		})
	}
}

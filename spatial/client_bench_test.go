package spatial_test

import (
	"context"
	"testing"
	"time"

	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/demo"
)

// BenchmarkBed reads one 33-plant bed: cold (cache dropped before each read) and warm,
// with no added latency (the client's and gRPC's own cost) and with 30 ms per call
// (the deployed server's; the original service needed about 3 s for such a bed).
// The ~71 calls of the second round fit in the default DefaultMaxInFlight slots.
func BenchmarkBed(b *testing.B) {
	ds := demo.Generate(demo.Options{Seed: 7, Beds: 1})
	for _, lat := range []time.Duration{0, 30 * time.Millisecond} {
		srv := startDemo(b, ds, demo.ServerOptions{Latency: lat})
		c := dial(b, srv.Addr(), spatial.ClientConfig{}) // defaults: DefaultMaxInFlight calls in flight
		project := ds.Beds[0].ProjectUUID
		if _, err := c.Bed(context.Background(), project); err != nil {
			b.Fatal(err)
		}
		for _, warm := range []bool{false, true} {
			name := "cold"
			if warm {
				name = "warm"
			}
			b.Run(name+"/latency="+lat.String(), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					if !warm {
						c.ResetCache()
					}
					if _, err := c.Bed(context.Background(), project); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkGarden reads six 33-plant beds cold at 30 ms per call: the original
// service's 600 calls and 20 s.
func BenchmarkGarden(b *testing.B) {
	ds := demo.Generate(demo.Options{Seed: 7})
	srv := startDemo(b, ds, demo.ServerOptions{Latency: 30 * time.Millisecond})
	c := dial(b, srv.Addr(), spatial.ClientConfig{})
	uuids := ds.ProjectUUIDs()
	for i := 0; i < b.N; i++ {
		c.ResetCache()
		for r := range c.Beds(context.Background(), uuids) {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
		}
	}
}

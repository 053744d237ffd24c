package server_test

import (
	"bufio"
	"context"
	"testing"
	"time"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/demo"
)

// BenchmarkBedsStream streams the seed's garden size (6 beds × 33 plants) from a demo
// spatial server answering each call after 30 ms, as a deployed one does, through
// real HTTP and gRPC on loopback. It reports the time to the first and to the last
// bed line. "cold" empties the spatial client's cache before each stream, "warm"
// keeps it; "original" is how the service this one replaces asked, one call at a time
// and nothing cached (about 20 s: run it with -benchtime 1x).
func BenchmarkBedsStream(b *testing.B) {
	ds := demo.Generate(demo.Options{})
	cases := []struct {
		name        string
		concurrency int
		cache       bool
		warm        bool
	}{
		{"cold", spatial.DefaultMaxInFlight, true, false},
		{"cold/concurrency-64", 64, true, false},
		{"warm", spatial.DefaultMaxInFlight, true, true},
		{"original", 1, false, false},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			so := startDemoSpatial(b, ds, demo.ServerOptions{})
			cfg := server.Config{
				Now:     func() time.Time { return ds.Now },
				Spatial: spatial.ClientConfig{Addr: so.Addr(), MaxInFlight: bc.concurrency, CallTimeout: time.Minute},
			}
			if !bc.cache {
				cfg.Spatial.CacheTTL = spatial.CacheDisabled
			}
			g := startGardend(b, cfg)
			token := g.register("bench")
			garden := g.gardenWithBeds(token, ds.ProjectUUIDs()).path
			// Fetch the clouds first, with no latency, so background downloads do not
			// compete with the streams measured.
			g.streamBeds(garden, token)
			g.waitClouds()
			so.SetLatency(30 * time.Millisecond)
			g.srv.ResetSpatialCache()
			if bc.warm {
				g.streamBeds(garden, token)
			}
			so.ResetStats()
			var first, last time.Duration
			b.ResetTimer()
			for range b.N {
				if !bc.warm {
					g.srv.ResetSpatialCache()
				}
				f, l := timeStream(b, g, garden+"/beds", token, len(ds.Beds))
				first += f
				last += l
			}
			b.ReportMetric(float64(first.Microseconds())/1000/float64(b.N), "ms/first-bed")
			b.ReportMetric(float64(last.Microseconds())/1000/float64(b.N), "ms/last-bed")
			st := so.Stats()
			b.ReportMetric(float64(st.MaxInFlight), "max-concurrent-calls")
		})
	}
}

// timeStream reads one beds stream and returns when its first and last lines came.
func timeStream(b *testing.B, g *gardend, path, token string, beds int) (first, last time.Duration) {
	b.Helper()
	start := time.Now()
	res := g.get(context.Background(), path, token)
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		if n == 0 {
			first = time.Since(start)
		}
		n++
	}
	last = time.Since(start)
	if n != beds || sc.Err() != nil {
		b.Fatalf("%d lines of %d: %v", n, beds, sc.Err())
	}
	return first, last
}

package server_test

import (
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/demo"
	"github.com/gardend/gardend/store"
)

// BenchmarkBackends measures the same requests on bbolt and on PostgreSQL (the test
// binary's own server on this machine: fsync and synchronous_commit off, see pgtest),
// side by side in one run:
//
//	go test -run '^$' -bench BenchmarkBackends -benchtime 3s ./server
//
// reads/… are token-authenticated GETs over real HTTP from 64 keep-alive connections,
// spread over the nodes; "postgres-2-nodes" runs two servers on one database. The
// load generator, the nodes and PostgreSQL share this machine's cores, so a second
// node can only show what it adds in concurrency, not in CPU.
func BenchmarkBackends(b *testing.B) {
	// Each run of a benchmark function gets a fresh database.
	backends := []struct {
		name  string
		open  func(testing.TB) backend
		nodes int
	}{
		{"bbolt", func(testing.TB) backend { return boltBackend }, 1},
		{"postgres", postgresBackend, 1},
		{"postgres-2-nodes", postgresBackend, 2},
	}
	for _, path := range []string{"/user", "/companies"} {
		b.Run("reads"+path, func(b *testing.B) {
			for _, bc := range backends {
				b.Run(bc.name, func(b *testing.B) { benchReads(b, bc.open(b), bc.nodes, path) })
			}
		})
	}
	b.Run("login", func(b *testing.B) {
		for _, bc := range backends[:2] {
			b.Run(bc.name, func(b *testing.B) { benchLogin(b, bc.open(b)) })
		}
	})
	b.Run("gardens-1000", func(b *testing.B) {
		for _, bc := range backends[:2] {
			b.Run(bc.name, func(b *testing.B) { benchGardens(b, bc.open(b), 1000) })
		}
	})
	b.Run("image-16MiB", func(b *testing.B) {
		for _, bc := range backends[:2] {
			b.Run(bc.name, func(b *testing.B) { benchImage(b, bc.open(b), 16<<20) })
		}
	})
	b.Run("beds-warm", func(b *testing.B) {
		for _, bc := range backends[:2] {
			b.Run(bc.name, func(b *testing.B) { benchBedsWarm(b, bc.open(b)) })
		}
	})
}

// benchReads runs GET path with one user's token from 64 connections against n
// nodes of backend b and reports requests per second.
func benchReads(b *testing.B, be backend, n int, path string) {
	bases := make([]string, n)
	var first *server.Server
	for i := range bases {
		srv, base, _ := runServerOn(b, be, server.Config{Logger: zerolog.New(io.Discard), MaxConcurrent: 256, MaxConnsPerAddr: 256})
		if i == 0 {
			first = srv
		}
		bases[i] = base
	}
	ts := &testServer{tb: b, srv: first}
	token := ts.register("reader")
	for i := range 10 {
		ts.createCompany(token, fmt.Sprintf("company %d", i))
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 64}}
	defer client.CloseIdleConnections()
	var next atomic.Int64
	// RunParallel runs parallelism × GOMAXPROCS goroutines: 64 clients.
	b.SetParallelism((64 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		base := bases[int(next.Add(1))%n]
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("Authorization", "Token "+token)
		for pb.Next() {
			res, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				b.Errorf("GET %s: %d", path, res.StatusCode)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}

// benchLogin logs in with the production argon2id cost.
func benchLogin(b *testing.B, be backend) {
	h := newHarnessOn(b, be, func(c *server.Config) {
		c.Argon2 = store.DefaultArgon2
		c.Logger = zerolog.New(io.Discard)
	})
	h.register("ann")
	body := `{"username":"ann","password":"pw-ann-123"}`
	b.ResetTimer()
	for b.Loop() {
		if res := h.do("POST", "/login", "", body); res.Code != http.StatusOK {
			b.Fatal(res.Code, res.Body.String())
		}
	}
}

// benchGardens lists GET /gardens for a user who can read n gardens.
func benchGardens(b *testing.B, be backend, n int) {
	ts := newTestServerOn(b, be, func(c *server.Config) { c.Logger = zerolog.New(io.Discard) })
	token := ts.register("many")
	st := ts.store()
	id := ts.userID("many")
	for c := range 10 {
		company, err := st.CreateCompany(id, fmt.Sprintf("company %d", c))
		if err != nil {
			b.Fatal(err)
		}
		for g := range n / 10 {
			if _, err := st.CreateGarden(company.ID, fmt.Sprintf("garden %d", g)); err != nil {
				b.Fatal(err)
			}
		}
	}
	var gs []store.Garden
	ts.must(http.StatusOK, "GET", "/gardens", token, nil).decode(b, &gs)
	if len(gs) != n {
		b.Fatalf("%d gardens visible, want %d", len(gs), n)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if res := ts.do("GET", "/gardens", token, nil); res.code != http.StatusOK {
			b.Fatalf("status %d", res.code)
		}
	}
}

// benchImage uploads an image of size bytes and downloads it again, over real HTTP,
// and reports the time of each.
func benchImage(b *testing.B, be backend, size int64) {
	srv, base, _ := runServerOn(b, be, server.Config{Logger: zerolog.New(io.Discard), MaxImageBytes: 2*size + 4096})
	ts := &testServer{tb: b, srv: srv}
	owner := ts.register("owner")
	c := ts.createCompany(owner, "c")
	path := base + gardenPath(c.ID, ts.createGarden(owner, c.ID, "g").ID) + "/image"
	var up, down time.Duration
	b.SetBytes(size)
	b.ResetTimer()
	for i := range b.N {
		body, length := uploadBody(b, size, uint64(i))
		req, _ := http.NewRequest("POST", path, body)
		req.ContentLength = length
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Token "+owner)
		start := time.Now()
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusCreated {
			b.Fatalf("upload: %d", res.StatusCode)
		}
		up += time.Since(start)

		req, _ = http.NewRequest("GET", path, nil)
		req.Header.Set("Authorization", "Token "+owner)
		start = time.Now()
		res, err = http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || n < size {
			b.Fatalf("download: %d, %d bytes", res.StatusCode, n)
		}
		down += time.Since(start)
	}
	b.ReportMetric(float64(up.Milliseconds())/float64(b.N), "ms/upload")
	b.ReportMetric(float64(down.Milliseconds())/float64(b.N), "ms/download")
}

// benchBedsWarm streams the seed's garden (6 beds × 33 plants) with the spatial
// answers cached (30 ms per spatial call otherwise): what the store adds to a listing.
func benchBedsWarm(b *testing.B, be backend) {
	ds := demo.Generate(demo.Options{})
	so := startDemoSpatial(b, ds, demo.ServerOptions{})
	g := startGardendOn(b, be, server.Config{
		Now:     func() time.Time { return ds.Now },
		Logger:  zerolog.New(io.Discard),
		Spatial: spatial.ClientConfig{Addr: so.Addr(), CallTimeout: time.Minute},
	})
	token := g.register("bench")
	garden := g.gardenWithBeds(token, ds.ProjectUUIDs()).path
	g.streamBeds(garden, token)
	g.waitClouds()
	so.SetLatency(30 * time.Millisecond)
	g.streamBeds(garden, token)
	var last time.Duration
	b.ResetTimer()
	for range b.N {
		_, l := timeStream(b, g, garden+"/beds", token, len(ds.Beds))
		last += l
	}
	b.ReportMetric(float64(last.Microseconds())/1000/float64(b.N), "ms/stream")
}

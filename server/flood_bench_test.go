package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/store"
)

// flood is a real server on loopback with the production argon2 cost, one account
// whose hash has that cost too, and a company to list while logins queue for hashing.
type flood struct {
	tb       testing.TB
	srv      *server.Server
	base     string
	client   *http.Client
	username string
	password string
	token    string
}

func newFlood(tb testing.TB, edit func(*server.Config)) *flood {
	tb.Helper()
	srv := fieldNewServer(tb, nil, func(c *server.Config) {
		c.Addr = "127.0.0.1:0"
		c.Argon2 = store.DefaultArgon2
		c.Now = time.Now
		c.Logger = zerolog.Nop()
		if edit != nil {
			edit(c)
		}
	})
	f := &flood{tb: tb, srv: srv, username: "farmer", password: "office-8am-login"}
	admin := server.NewAdmin(srv.Store(), store.NewPasswords(store.DefaultArgon2, 1), tb.TempDir())
	op := server.UsersCreate{Username: f.username, Password: f.password, FirstName: "F", LastName: "L"}
	if err := server.RunAdmin(context.Background(), admin, op, func(store.User) error { return nil }); err != nil {
		tb.Fatal(err)
	}
	f.base = "http://" + fieldRun(tb, srv)
	f.client = &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	tb.Cleanup(f.client.CloseIdleConnections)
	var res struct{ Token string }
	if code := f.post("/login", f.credentials(), &res); code != http.StatusOK {
		tb.Fatalf("login: %d", code)
	}
	f.token = res.Token
	if code := f.send("POST", "/companies", f.token, map[string]string{"name": "Farm"}, nil); code != http.StatusCreated {
		tb.Fatalf("create company: %d", code)
	}
	return f
}

func (f *flood) credentials() map[string]string {
	return map[string]string{"username": f.username, "password": f.password}
}

func (f *flood) post(path string, body, out any) int { return f.send("POST", path, "", body, out) }

// send makes one request and returns its status; a transport error is status 0.
func (f *flood) send(method, path, token string, body, out any) int {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, f.base+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Token "+token)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		json.Unmarshal(data, out)
	}
	return resp.StatusCode
}

// latencies collects request durations from many goroutines.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) { l.mu.Lock(); l.d = append(l.d, d); l.mu.Unlock() }

// quantile is the q-quantile (0 < q ≤ 1) of the durations seen, nearest rank.
func (l *latencies) quantile(q float64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.d) == 0 {
		return 0
	}
	s := slices.Clone(l.d)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}

// loginFlood runs workers that log in as fast as they can until n logins answered,
// and returns their latencies and how many were not 200.
func (f *flood) loginFlood(workers int, n int64) (lat *latencies, failed int64) {
	lat = &latencies{}
	var done, bad atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for done.Add(1) <= n {
				start := time.Now()
				if code := f.post("/login", f.credentials(), nil); code != http.StatusOK {
					bad.Add(1)
				}
				lat.add(time.Since(start))
			}
		})
	}
	wg.Wait()
	return lat, bad.Load()
}

// heapPeak samples runtime.MemStats every interval until stop is closed and returns
// the largest HeapInuse seen.
func heapPeak(interval time.Duration, stop <-chan struct{}) <-chan uint64 {
	out := make(chan uint64, 1)
	go func() {
		var ms runtime.MemStats
		var peak uint64
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-stop:
				out <- peak
				return
			case <-t.C:
			}
		}
	}()
	return out
}

const mib = 1 << 20

// BenchmarkLoginFlood is the office at 8 a.m.: 8 clients log in with the right
// password as fast as they are answered, with the production argon2 cost, while
// another client lists its companies every 20 ms. Run it with a fixed count, e.g.
// -bench LoginFlood -benchtime 400x. It reports logins/s, the login p50 and p99, the
// p99 of GET /companies during the flood and the peak heap. The process is set up as
// gardend serve sets it up (hashes get Ps of their own, the default memory limit),
// with the default number of hashes at once (one per core) and others for comparison,
// and once without the Ps of their own.
func BenchmarkLoginFlood(b *testing.B) {
	cores := server.DefaultMaxHashing()
	for _, tc := range []struct {
		name     string
		hashing  int
		ownProcs bool
	}{
		{"hashing=default", cores, true},
		{"hashing=1", 1, true},
		{"hashing=4", 4, true},
		{"hashing=default,shared-procs", cores, false},
	} {
		b.Run(tc.name, func(b *testing.B) {
			defer server.SetMemoryLimit(server.DefaultMemoryLimit(store.DefaultArgon2, tc.hashing))()
			benchmarkLoginFlood(b, tc.hashing, tc.ownProcs)
		})
	}
}

func benchmarkLoginFlood(b *testing.B, hashing int, ownProcs bool) {
	f := newFlood(b, func(c *server.Config) { c.MaxHashing, c.HashingProcs = hashing, ownProcs })
	stop := make(chan struct{})
	peak := heapPeak(5*time.Millisecond, stop)
	companies := &latencies{}
	var probes sync.WaitGroup
	probes.Go(func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			start := time.Now()
			if code := f.send("GET", "/companies", f.token, nil, nil); code != http.StatusOK {
				b.Errorf("GET /companies during the flood: %d", code)
			}
			companies.add(time.Since(start))
		}
	})
	b.ResetTimer()
	start := time.Now()
	lat, failed := f.loginFlood(8, int64(b.N))
	elapsed := time.Since(start)
	b.StopTimer()
	close(stop)
	probes.Wait()
	if failed > 0 {
		b.Errorf("%d of %d logins failed", failed, b.N)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "logins/s")
	b.ReportMetric(float64(lat.quantile(0.5).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat.quantile(0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(companies.quantile(0.99).Microseconds())/1000, "companies-p99-ms")
	b.ReportMetric(float64(<-peak)/mib, "peak-heap-MiB")
	b.ReportMetric(0, "ns/op")
}

// registrationFlood runs workers that register fresh accounts until stop is closed or
// n accounts were created (n < 0: no such end), and returns the count of created
// accounts and a channel closed when every worker is done.
func (f *flood) registrationFlood(workers int, n int64, stop <-chan struct{}) (*atomic.Int64, <-chan struct{}) {
	var created, seq atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for n < 0 || created.Load() < n {
				select {
				case <-stop:
					return
				default:
				}
				name := fmt.Sprintf("flood-%d-%d", w, seq.Add(1))
				body := map[string]string{"username": name, "password": "pw-of-" + name, "first_name": "F", "last_name": "L"}
				if f.post("/register", body, nil) == http.StatusCreated {
					created.Add(1)
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	return &created, done
}

// BenchmarkLoginDuringRegistrationFlood: 48 clients register accounts as fast as they
// can while one user logs in b.N times, one login at a time. It reports that user's
// login p50 and p99, the registrations created per second and the peak heap: with the
// default registration limits (which stop the flood from one address), and with
// limits too high to matter (then only the hashing line's priority protects logins).
func BenchmarkLoginDuringRegistrationFlood(b *testing.B) {
	for _, tc := range []struct {
		name  string
		limit int
	}{{"limits=default", 0}, {"limits=none", 1 << 30}} {
		b.Run(tc.name, func(b *testing.B) {
			hashing := server.DefaultMaxHashing()
			defer server.SetMemoryLimit(server.DefaultMemoryLimit(store.DefaultArgon2, hashing))()
			f := newFlood(b, func(c *server.Config) {
				c.RegisterLimit, c.RegisterGlobalLimit = tc.limit, tc.limit
				c.HashingProcs = true
			})
			stop := make(chan struct{})
			peak := heapPeak(5*time.Millisecond, stop)
			created, done := f.registrationFlood(48, -1, stop)
			b.ResetTimer()
			start := time.Now()
			lat, failed := f.loginFlood(1, int64(b.N))
			elapsed := time.Since(start)
			b.StopTimer()
			close(stop)
			<-done
			if failed > 0 {
				b.Errorf("%d of %d logins failed", failed, b.N)
			}
			b.ReportMetric(float64(lat.quantile(0.5).Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat.quantile(0.99).Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(created.Load())/elapsed.Seconds(), "registrations/s")
			b.ReportMetric(float64(<-peak)/mib, "peak-heap-MiB")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// The hashing memory is a hard cap: under a flood of correct logins and one of
// registrations, with the production argon2 cost (46 MiB per hash) and two hashes at
// once, the heap stays within serve's default memory limit (the hashing budget plus
// headroom), give or take the one hash that may start as the collector does. Before,
// four hashes at once and the garbage of finished ones took it past 600 MiB.
func TestHashingHeapBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("hashes 64 MiB at a time for a few seconds; skipped with -short")
	}
	const hashing, logins, registrations = 2, 16, 8
	f := newFlood(t, func(c *server.Config) {
		c.MaxHashing = hashing
		c.RegisterLimit, c.RegisterGlobalLimit = 1000, 1000
	})
	limit := server.DefaultMemoryLimit(store.DefaultArgon2, hashing)
	defer server.SetMemoryLimit(limit)() // as gardend serve does
	runtime.GC()
	stop := make(chan struct{})
	peak := heapPeak(2*time.Millisecond, stop)
	// Registrations wait behind logins: they finish alone once the logins are done.
	created, registered := f.registrationFlood(8, registrations, stop)
	_, failed := f.loginFlood(8, logins)
	<-registered
	close(stop)
	got := <-peak
	t.Logf("peak heap %d MiB with %d logins and %d registrations; hashing budget %d MiB, memory limit %d MiB",
		got/mib, logins, created.Load(), server.HashingMemory(store.DefaultArgon2, hashing)/mib, limit/mib)
	if failed > 0 {
		t.Errorf("%d logins failed", failed)
	}
	// The limit is soft: an allocation is never refused, and one hash allocates its
	// memory at once.
	if bound := uint64(limit) + store.DefaultArgon2.MemoryBytes(); got > bound {
		t.Fatalf("peak heap %d MiB, over the %d MiB limit and one hash", got/mib, limit/mib)
	}
}

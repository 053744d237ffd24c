package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/spatial/demo"
	"github.com/gardend/gardend/store"
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

// startDemoSpatial serves ds on a loopback port until the test ends.
func startDemoSpatial(tb testing.TB, ds *demo.Dataset, so demo.ServerOptions) *demo.Server {
	tb.Helper()
	srv := demo.NewServer(ds, so)
	if _, err := srv.Start("127.0.0.1:0"); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(srv.Stop)
	return srv
}

// gardend is a running server (Run on a loopback port) that can be stopped and started
// again on the same data directory.
type gardend struct {
	tb      testing.TB
	cfg     server.Config
	backend backend
	srv     *server.Server
	base    string
	stop    func()
}

func startGardend(tb testing.TB, cfg server.Config) *gardend {
	tb.Helper()
	return startGardendOn(tb, boltBackend, cfg)
}

// startGardendOn is startGardend on the backend b.
func startGardendOn(tb testing.TB, b backend, cfg server.Config) *gardend {
	tb.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = tb.TempDir()
	}
	cfg.Addr = "127.0.0.1:0"
	if cfg.Argon2 == (store.Argon2Params{}) {
		cfg.Argon2 = cheapArgon2
	}
	if cfg.Logger.GetLevel() == zerolog.TraceLevel {
		cfg.Logger = zerolog.New(zerolog.NewTestWriter(tb)).Level(zerolog.WarnLevel)
	}
	g := &gardend{tb: tb, cfg: cfg, backend: b}
	g.start()
	tb.Cleanup(g.halt)
	return g
}

func (g *gardend) start() {
	g.tb.Helper()
	srv, err := newServerOn(g.tb, g.backend, g.cfg)
	if err != nil {
		g.tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	select {
	case <-srv.Ready():
	case err := <-done:
		g.tb.Fatalf("Run: %v", err)
	}
	g.srv, g.base = srv, "http://"+srv.Addr()
	g.stop = func() {
		cancel()
		if err := <-done; err != nil {
			g.tb.Errorf("Run returned %v", err)
		}
		if err := srv.Store().CheckIndexes(); err != nil {
			g.tb.Errorf("index check: %v", err)
		}
		srv.Close()
	}
}

// halt stops the server (once).
func (g *gardend) halt() {
	if g.stop != nil {
		g.stop()
		g.stop = nil
	}
}

func (g *gardend) restart() {
	g.tb.Helper()
	g.halt()
	g.start()
}

// get sends an authenticated GET over the network.
func (g *gardend) get(ctx context.Context, path, token string) *http.Response {
	g.tb.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", g.base+path, nil)
	if err != nil {
		g.tb.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Token "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		g.tb.Fatal(err)
	}
	return res
}

// call sends a request through the handler (no network) and returns status and body.
func (g *gardend) call(method, path, token string, body any) (int, []byte) {
	g.tb.Helper()
	var rd io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		rd = bytes.NewReader(data)
	}
	req, _ := http.NewRequest(method, g.base+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Token "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		g.tb.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res.StatusCode, data
}

func (g *gardend) must(want int, method, path, token string, body any) []byte {
	g.tb.Helper()
	code, data := g.call(method, path, token, body)
	if code != want {
		g.tb.Fatalf("%s %s: %d, want %d: %s", method, path, code, want, data)
	}
	return data
}

func (g *gardend) register(username string) string {
	g.tb.Helper()
	var v struct{ Token string }
	json.Unmarshal(g.must(201, "POST", "/register", "", map[string]string{
		"username": username, "password": "pw-of-" + username, "first_name": "F", "last_name": "L",
	}), &v)
	return v.Token
}

// farm is a company with a garden and its beds, made through the API.
type farm struct {
	company, garden uint64
	path            string // the garden's path
	beds            []uint64
}

// gardenWithBeds creates a company and garden as token's user, with one bed per
// project, in project order.
func (g *gardend) gardenWithBeds(token string, projects []string) farm {
	g.tb.Helper()
	var c, gd struct{ ID uint64 }
	json.Unmarshal(g.must(201, "POST", "/companies", token, map[string]string{"name": "farm"}), &c)
	json.Unmarshal(g.must(201, "POST", companyPath(c.ID)+"/gardens", token, map[string]string{"name": "garden"}), &gd)
	f := farm{company: c.ID, garden: gd.ID, path: gardenPath(c.ID, gd.ID)}
	for _, p := range projects {
		var b struct{ ID uint64 }
		json.Unmarshal(g.must(201, "POST", f.path+"/beds", token, map[string]string{"uuid": p}), &b)
		f.beds = append(f.beds, b.ID)
	}
	return f
}

// waitClouds waits for the download queue to drain.
func (g *gardend) waitClouds() {
	g.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := g.srv.WaitCloudsIdle(ctx); err != nil {
		jobs, _ := g.srv.Store().CloudJobs()
		g.tb.Fatalf("download queue did not drain: %v; queue %+v", err, jobs)
	}
}

// bedLine is a decoded line of the beds stream; raw keeps it for checks of omission.
type bedLine struct {
	ID          uint64   `json:"id"`
	Name        string   `json:"name"`
	Plant       string   `json:"plant"`
	Variety     string   `json:"variety"`
	Plants      string   `json:"plants"`
	SoilHumidty *float64 `json:"soil_humidty"`
	Harvest     *string  `json:"harvest"`
	Yield       *float64 `json:"yield"`
	Health      []health `json:"health"`
	PlantCoords []latLon `json:"plant_coords"`
	Error       string   `json:"error"`
	keys        []string
}

type health struct {
	Type     string `json:"type"`
	Loglevel int64  `json:"loglevel"`
}

type latLon struct {
	Lat float64 `json:"lat"`
	Lon float64 `json:"lon"`
}

// streamBeds reads the whole beds stream, checking the content type and that every
// line is a complete JSON object.
func (g *gardend) streamBeds(path, token string) []bedLine {
	g.tb.Helper()
	res := g.get(context.Background(), path+"/beds", token)
	defer res.Body.Close()
	if res.StatusCode != 200 {
		body, _ := io.ReadAll(res.Body)
		g.tb.Fatalf("GET beds: %d %s", res.StatusCode, body)
	}
	if ct := res.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		g.tb.Fatalf("Content-Type %q", ct)
	}
	return readBedLines(g.tb, res.Body)
}

func readBedLines(tb testing.TB, r io.Reader) []bedLine {
	tb.Helper()
	var out []bedLine
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l bedLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			tb.Fatalf("line %q: %v", sc.Text(), err)
		}
		var m map[string]json.RawMessage
		json.Unmarshal(sc.Bytes(), &m)
		for k := range m {
			l.keys = append(l.keys, k)
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

func (l bedLine) has(key string) bool {
	for _, k := range l.keys {
		if k == key {
			return true
		}
	}
	return false
}

// eventually polls cond until it holds, failing the test after 10 s: for states of
// other processes (the demo server's counters) that have no event to wait on.
func eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

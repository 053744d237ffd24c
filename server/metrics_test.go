package server_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/spatial/demo"
)

// scrape fetches url and parses the Prometheus text exposition format.
func scrape(t *testing.T, client *http.Client, url string) map[string]*dto.MetricFamily {
	t.Helper()
	res, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET %s: %s %q", url, res.Status, res.Header.Get("Content-Type"))
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatalf("parse the exposition format: %v", err)
	}
	return families
}

// sample finds the metric of family name whose labels include want; nil if none.
func sample(families map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	f := families[name]
	if f == nil {
		return nil
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		return m
	}
	return nil
}

func value(m *dto.Metric) float64 {
	switch {
	case m == nil:
		return -1
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return -1
}

// TestMetrics scrapes the metrics listener after real traffic (logins, a listing of
// beds from the demo spatial server, downloads) and checks each family the operator
// relies on, labelled by route pattern and never by raw path.
func TestMetrics(t *testing.T) {
	ss := newSpatialSetup(t, demo.Options{Seed: 3, Beds: 2, Plants: 4}, demo.ServerOptions{}, func(c *server.Config) {
		c.MetricsAddr = "127.0.0.1:0"
	})
	g := ss.g
	g.must(http.StatusOK, "POST", "/login", "", map[string]string{"username": "gardener", "password": "pw-of-gardener"})
	g.call("POST", "/login", "", map[string]string{"username": "gardener", "password": "wrong"})
	g.call("GET", "/no/such/endpoint", "", nil)
	g.streamBeds(ss.garden, ss.token)
	g.waitClouds()
	g.streamBeds(ss.garden, ss.token) // served from the cache
	if err := g.srv.Reader().ReadAll(context.Background()); err != nil {
		t.Fatal(err)
	}

	fam := scrape(t, http.DefaultClient, "http://"+g.srv.MetricsAddr()+"/metrics")
	beds := "/companies/{company_id}/gardens/{garden_id}/beds"
	checks := []struct {
		name   string
		labels map[string]string
		ok     func(float64) bool
	}{
		{"gardend_http_requests_total", map[string]string{"method": "POST", "route": "/login", "code": "200"}, eq(1)},
		{"gardend_http_requests_total", map[string]string{"method": "POST", "route": "/login", "code": "400"}, eq(1)},
		{"gardend_http_requests_total", map[string]string{"method": "GET", "route": beds, "code": "200"}, eq(2)},
		{"gardend_http_requests_total", map[string]string{"method": "GET", "route": "unmatched", "code": "404"}, eq(1)},
		{"gardend_http_request_duration_seconds", map[string]string{"method": "GET", "route": beds}, eq(2)},
		{"gardend_logins_total", map[string]string{"outcome": "success"}, eq(1)},
		{"gardend_logins_total", map[string]string{"outcome": "invalid"}, eq(1)},
		{"gardend_spatial_call_duration_seconds", map[string]string{"method": demo.MethodPointCloud, "code": "OK"}, atLeast(1)},
		{"gardend_spatial_cache_hits_total", nil, atLeast(1)},
		{"gardend_pointcloud_queue_jobs", map[string]string{"state": "pending"}, eq(0)},
		{"gardend_pointcloud_queue_jobs", map[string]string{"state": "failed"}, eq(0)},
		{"gardend_pointcloud_downloads_in_progress", nil, eq(0)},
		{"gardend_tile_queue_jobs", map[string]string{"state": "building"}, atLeast(0)},
		{"gardend_password_hashes_in_progress", nil, eq(0)},
		{"gardend_password_hash_queue", nil, eq(0)},
		{"gardend_store_transaction_duration_seconds", map[string]string{"kind": "write"}, atLeast(3)},
		{"gardend_store_transaction_duration_seconds", map[string]string{"kind": "read"}, atLeast(3)},
		{"gardend_build_info", nil, eq(1)},
		// The first stream recorded both beds; the second, and the reader's reads of
		// the same measurements, were skipped.
		{"gardend_history_readings_total", map[string]string{"outcome": "recorded"}, eq(2)},
		{"gardend_history_readings_total", map[string]string{"outcome": "skipped"}, atLeast(4)},
		{"gardend_history_points_total", map[string]string{"of": "plant"}, eq(8)},
		{"gardend_history_points_total", map[string]string{"of": "bed"}, eq(2)},
		{"gardend_history_background_reads_total", map[string]string{"outcome": "ok"}, atLeast(2)},
		{"gardend_history_background_reads_total", map[string]string{"outcome": "failed"}, eq(0)},
		{"gardend_history_lease_held", nil, func(v float64) bool { return v == 0 || v == 1 }},
		{"gardend_alerts_changes_total", map[string]string{"change": "raised"}, atLeast(0)},
		{"go_goroutines", nil, atLeast(1)},
		{"process_resident_memory_bytes", nil, atLeast(1)},
	}
	for _, c := range checks {
		if v := value(sample(fam, c.name, c.labels)); !c.ok(v) {
			t.Errorf("%s%v = %v", c.name, c.labels, v)
		}
	}
	for _, m := range fam["gardend_http_requests_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "route" && strings.ContainsAny(l.GetValue(), "0123456789") {
				t.Errorf("route label holds a raw path: %q", l.GetValue())
			}
		}
	}

	// Never on the public listener.
	if code, _ := g.call("GET", "/metrics", "", nil); code != http.StatusNotFound {
		t.Errorf("public GET /metrics: %d", code)
	}
}

func eq(want float64) func(float64) bool   { return func(v float64) bool { return v == want } }
func atLeast(n float64) func(float64) bool { return func(v float64) bool { return v >= n } }

// unixClient speaks HTTP over the admin socket.
func unixClient(sock string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}}
}

// TestDiagnosticsOnAdminSocketOnly: the profiler and the metrics answer on the admin
// socket; the public listener knows neither.
func TestDiagnosticsOnAdminSocketOnly(t *testing.T) {
	dir := t.TempDir()
	_, base, _ := runServer(t, server.Config{DataDir: dir, AdminSocket: true})
	admin := unixClient(server.AdminSocketPath(dir))
	for path, want := range map[string]string{
		"/debug/pprof/":                  "goroutine",
		"/debug/pprof/goroutine?debug=1": "goroutine profile: total",
		"/debug/pprof/heap?debug=1":      "heap profile:",
		"/debug/pprof/profile?seconds=1": "",
		"/debug/pprof/cmdline":           "",
		"/metrics":                       "gardend_build_info",
	} {
		res, err := admin.Get("http://gardend" + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.Contains(string(body), want) || len(body) == 0 {
			t.Errorf("admin socket GET %s: %s, %d bytes", path, res.Status, len(body))
		}
	}
	fam := scrape(t, admin, "http://gardend/metrics")
	if sample(fam, "gardend_http_requests_total", nil) != nil {
		t.Error("the admin socket's own requests were counted as API traffic")
	}
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/goroutine?debug=1", "/metrics"} {
		res, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("public GET %s: %s", path, res.Status)
		}
	}
}

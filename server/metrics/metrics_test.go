package metrics_test

import (
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gardend/gardend/server/metrics"
)

// scrape serves m and parses the answer with Prometheus' own parser.
func scrape(t *testing.T, m *metrics.Metrics) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	w := httptest.NewRecorder()
	m.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "text/plain; version=0.0.4; charset=utf-8" {
		t.Fatalf("%d %q", w.Code, w.Header().Get("Content-Type"))
	}
	text := w.Body.String()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("the exposition does not parse: %v\n%s", err, text)
	}
	return fams, text
}

func find(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) *dto.Metric {
	t.Helper()
	f := fams[name]
	if f == nil {
		t.Fatalf("no family %s", name)
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if have[labels[i]] != labels[i+1] {
				continue next
			}
		}
		return m
	}
	t.Fatalf("no %s%v", name, labels)
	return nil
}

// TestExposition: every instrument reads back, through Prometheus' parser, as what was
// observed: counts by route and code, cumulative buckets with le bounds, sums, the
// values of the sources, and label values escaped.
func TestExposition(t *testing.T) {
	m := metrics.New(metrics.Build{Version: `v1 "quoted" \ back` + "\nline", Revision: "abc", Go: "go1.27.3"})
	companies := m.Route("GET", "/companies")
	if m.Route("GET", "/companies") != companies {
		t.Fatal("the same route resolved twice gives two instruments")
	}
	companies.Observe(200, 3*time.Millisecond)
	companies.Observe(200, 20*time.Millisecond)
	companies.Observe(503, 50*time.Second)
	m.Route("BREW", "/coffee").Observe(418, time.Millisecond) // any method token: "other"
	m.Unmatched("GET").Observe(404, time.Microsecond)
	m.Unmatched("BREW").Observe(405, time.Microsecond)
	for _, code := range []int{200, 400, 401, 429, 500} {
		m.ObserveLogin(code)
	}
	m.ObserveSpatialCall("/seerep.Meta/GetProjects", "OK", 2*time.Millisecond)
	m.ObserveSpatialCall("/seerep.Meta/GetProjects", "Unavailable", time.Second)
	m.ObserveTx(true, 300*time.Microsecond)
	m.ObserveTx(false, 50*time.Microsecond)
	m.SetSources(metrics.Sources{
		Hashing:      func() (int, int) { return 2, 5 },
		SpatialCache: func() (int64, int64) { return 7, 3 },
		CloudQueue:   func() (int, int, int, error) { return 4, 1, 2, nil },
	})
	fams, text := scrape(t, m)

	counts := []struct {
		method, route, code string
		want                float64
	}{
		{"GET", "/companies", "200", 2},
		{"GET", "/companies", "503", 1},
		{"other", "/coffee", "418", 1},
		{"GET", "unmatched", "404", 1},
		{"other", "unmatched", "405", 1},
	}
	for _, c := range counts {
		if got := find(t, fams, "gardend_http_requests_total", "method", c.method, "route", c.route, "code", c.code).GetCounter().GetValue(); got != c.want {
			t.Errorf("requests %s %s %s = %v, want %v", c.method, c.route, c.code, got, c.want)
		}
	}
	if fams["gardend_http_requests_total"].GetType() != dto.MetricType_COUNTER {
		t.Errorf("requests type %v", fams["gardend_http_requests_total"].GetType())
	}

	h := find(t, fams, "gardend_http_request_duration_seconds", "method", "GET", "route", "/companies").GetHistogram()
	if h.GetSampleCount() != 3 || math.Abs(h.GetSampleSum()-50.023) > 1e-9 {
		t.Errorf("latency count %d sum %v", h.GetSampleCount(), h.GetSampleSum())
	}
	wantCum := map[float64]uint64{.001: 0, .0025: 0, .005: 1, .01: 1, .025: 2, 30: 2}
	for _, b := range h.GetBucket() {
		if want, ok := wantCum[b.GetUpperBound()]; ok && b.GetCumulativeCount() != want {
			t.Errorf("bucket le=%v: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}
	if len(h.GetBucket()) != 15 { // 14 bounds and +Inf
		t.Errorf("%d buckets", len(h.GetBucket()))
	}
	// A bound is inclusive (le): exactly 1 ms lands in the 0.001 bucket.
	if b := find(t, fams, "gardend_http_request_duration_seconds", "method", "other", "route", "/coffee").GetHistogram().GetBucket()[0]; b.GetCumulativeCount() != 1 {
		t.Errorf("1 ms is not counted in le=0.001: %v", b)
	}

	for outcome, want := range map[string]float64{"success": 1, "invalid": 2, "limited": 1, "error": 1} {
		if got := find(t, fams, "gardend_logins_total", "outcome", outcome).GetCounter().GetValue(); got != want {
			t.Errorf("logins %s = %v, want %v", outcome, got, want)
		}
	}
	if got := find(t, fams, "gardend_spatial_call_duration_seconds", "method", "/seerep.Meta/GetProjects", "code", "Unavailable").GetHistogram().GetSampleCount(); got != 1 {
		t.Errorf("spatial calls %d", got)
	}
	if got := find(t, fams, "gardend_store_transaction_duration_seconds", "kind", "write").GetHistogram().GetSampleSum(); math.Abs(got-0.0003) > 1e-12 {
		t.Errorf("write tx sum %v", got)
	}
	gauges := map[string]float64{
		"gardend_password_hashes_in_progress":      2,
		"gardend_password_hash_queue":              5,
		"gardend_pointcloud_downloads_in_progress": 2,
	}
	for name, want := range gauges {
		if got := find(t, fams, name).GetGauge().GetValue(); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got := find(t, fams, "gardend_pointcloud_queue_jobs", "state", "failed").GetGauge().GetValue(); got != 1 {
		t.Errorf("failed jobs %v", got)
	}
	if got := find(t, fams, "gardend_spatial_cache_hits_total").GetCounter().GetValue(); got != 7 {
		t.Errorf("cache hits %v", got)
	}
	if got := find(t, fams, "gardend_build_info", "revision", "abc").GetLabel(); got[2].GetName() != "version" || got[2].GetValue() != `v1 "quoted" \ back`+"\nline" {
		t.Errorf("build info labels %v", got)
	}

	// The runtime's and the process's families, as the Prometheus client named them.
	for _, name := range []string{"go_goroutines", "go_threads", "go_memstats_heap_alloc_bytes", "go_memstats_alloc_bytes_total",
		"go_sched_gomaxprocs_threads", "process_resident_memory_bytes", "process_open_fds", "process_start_time_seconds"} {
		m := fams[name]
		if m == nil || len(m.GetMetric()) != 1 {
			t.Errorf("%s missing", name)
			continue
		}
		v := m.GetMetric()[0].GetGauge().GetValue() + m.GetMetric()[0].GetCounter().GetValue()
		if v <= 0 {
			t.Errorf("%s = %v", name, v)
		}
	}
	if find(t, fams, "process_cpu_seconds_total").GetCounter().GetValue() < 0 {
		t.Error("negative CPU time")
	}
	if q := find(t, fams, "go_gc_duration_seconds").GetSummary().GetQuantile(); len(q) != 5 {
		t.Errorf("gc pause quantiles %v", q)
	}
	if strings.Contains(text, "gardend_http_request_duration_seconds_bucket{method=\"POST\"") {
		t.Error("a route never requested has a latency histogram")
	}
}

// TestCloudQueueFailure: a queue that cannot be read is left out of the scrape, which
// still answers.
func TestCloudQueueFailure(t *testing.T) {
	m := metrics.New(metrics.Build{})
	m.SetSources(metrics.Sources{CloudQueue: func() (int, int, int, error) { return 0, 0, 0, errors.New("db down") }})
	fams, _ := scrape(t, m)
	if fams["gardend_pointcloud_queue_jobs"] != nil {
		t.Error("a queue that could not be read was reported")
	}
	if fams["gardend_build_info"] == nil {
		t.Error("the rest of the scrape is missing")
	}
}

// BenchmarkObserveRequest is the per-request cost of the metrics, from every core.
func BenchmarkObserveRequest(b *testing.B) {
	m := metrics.New(metrics.Build{})
	rt := m.Route("GET", "/companies")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			rt.Observe(200, 3*time.Millisecond)
		}
	})
}

// Package metrics is gardend's Prometheus instrumentation: one registry per server,
// built by the server and handed what it observes. The leaves (store, spatial) know
// nothing of it; they take plain observer functions that the server connects here.
package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Build labels gardend_build_info.
type Build struct {
	Version, Revision, Go string
}

// Sources are read at each scrape; a nil one is left out.
type Sources struct {
	// Hashing: password hashes in progress and callers waiting for a slot.
	Hashing func() (hashing, waiting int)
	// SpatialCache: answers served from the spatial client's cache, and callers that
	// joined an identical call in flight, since start.
	SpatialCache func() (hits, collapsed int64)
	// CloudQueue: point-cloud downloads pending and failed in the queue, and in
	// progress now.
	CloudQueue func() (pending, failed, inFlight int, err error)
	// Tiles: garden pictures queued for tiling, and being tiled now.
	Tiles func() (queued, building int)
	// Capacity: what the server's limits hold now.
	Capacity func() Capacity
	// Readiness runs the readiness checks (each bounded in time by the server).
	Readiness func() []Check
}

// Capacity is what each of the server's limits holds now, beside the limit.
type Capacity struct {
	RequestSlots, RequestSlotsLimit int
	Connections, ConnectionsLimit   int
	BodyBytes, BodyBytesLimit       int64
	Uploads, UploadsLimit           int
}

// Check is one readiness check's outcome; an optional one does not make the server
// unready.
type Check struct {
	Name         string
	OK, Optional bool
}

// Metrics holds the registry and the instruments.
type Metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	logins   *prometheus.CounterVec
	spatial  *prometheus.HistogramVec
	tx       *prometheus.HistogramVec

	mu  sync.Mutex
	src Sources
}

// New builds a registry with the Go runtime and process collectors and gardend's own.
func New(b Build) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gardend_http_requests_total",
			Help: "HTTP requests answered, by method, route pattern (\"unmatched\" when no route took it) and status code.",
		}, []string{"method", "route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gardend_http_request_duration_seconds",
			Help:    "Time from receiving a request to its last byte written, by method and route pattern.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"method", "route"}),
		logins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gardend_logins_total",
			Help: "POST /login outcomes: success, invalid (wrong credentials or malformed), limited (429: too many failures), error (5xx).",
		}, []string{"outcome"}),
		spatial: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gardend_spatial_call_duration_seconds",
			Help:    "Calls sent to the spatial data server (each attempt), by gRPC method and status code.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 120},
		}, []string{"method", "code"}),
		tx: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gardend_store_transaction_duration_seconds",
			Help:    "Database transactions of store operations, by kind (read, write), the wait for the write lock included.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
		}, []string{"kind"}),
	}
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "gardend_build_info",
		Help:        "Always 1; the labels say which gardend runs.",
		ConstLabels: prometheus.Labels{"version": b.Version, "revision": b.Revision, "goversion": b.Go},
	})
	info.Set(1)
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.requests, m.latency, m.logins, m.spatial, m.tx, info,
		sourceCollector{m},
	)
	return m
}

// SetSources connects the values read at scrape time.
func (m *Metrics) SetSources(s Sources) {
	m.mu.Lock()
	m.src = s
	m.mu.Unlock()
}

// Handler serves the registry in the Prometheus text exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// knownMethods bounds the method label: a client may send any token as a method.
var knownMethods = map[string]bool{
	"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "OPTIONS": true,
}

// ObserveRequest counts one answered request. route is the matched pattern, "" when
// no route took the request.
func (m *Metrics) ObserveRequest(method, route string, status int, d time.Duration) {
	if !knownMethods[method] {
		method = "other"
	}
	if route == "" {
		route = "unmatched"
	}
	m.requests.WithLabelValues(method, route, statusLabel(status)).Inc()
	m.latency.WithLabelValues(method, route).Observe(d.Seconds())
}

// statusLabels are the codes' labels, made once: requests are counted on a hot path.
var statusLabels = func() (l [600]string) {
	for i := range l {
		l[i] = strconv.Itoa(i)
	}
	return l
}()

func statusLabel(code int) string {
	if code >= 0 && code < len(statusLabels) {
		return statusLabels[code]
	}
	return strconv.Itoa(code)
}

// ObserveLogin counts a POST /login by its status code.
func (m *Metrics) ObserveLogin(status int) {
	outcome := "invalid"
	switch {
	case status >= 200 && status < 300:
		outcome = "success"
	case status == http.StatusTooManyRequests:
		outcome = "limited"
	case status >= 500:
		outcome = "error"
	}
	m.logins.WithLabelValues(outcome).Inc()
}

// ObserveSpatialCall records one RPC to the spatial server.
func (m *Metrics) ObserveSpatialCall(method, code string, d time.Duration) {
	m.spatial.WithLabelValues(method, code).Observe(d.Seconds())
}

// ObserveTx records one store transaction.
func (m *Metrics) ObserveTx(write bool, d time.Duration) {
	kind := "read"
	if write {
		kind = "write"
	}
	m.tx.WithLabelValues(kind).Observe(d.Seconds())
}

// sourceCollector reads Sources at scrape time.
type sourceCollector struct{ m *Metrics }

var (
	descHashing   = prometheus.NewDesc("gardend_password_hashes_in_progress", "Password hashes (login, registration) being computed now.", nil, nil)
	descWaiting   = prometheus.NewDesc("gardend_password_hash_queue", "Logins and registrations waiting for a hashing slot.", nil, nil)
	descHits      = prometheus.NewDesc("gardend_spatial_cache_hits_total", "Spatial server answers served from the cache.", nil, nil)
	descCollapsed = prometheus.NewDesc("gardend_spatial_calls_collapsed_total", "Spatial calls that joined an identical call in flight instead of being sent.", nil, nil)
	descQueue     = prometheus.NewDesc("gardend_pointcloud_queue_jobs", "Point-cloud downloads in the queue, by state: pending (due or backing off), failed (out of attempts).", []string{"state"}, nil)
	descInFlight  = prometheus.NewDesc("gardend_pointcloud_downloads_in_progress", "Point clouds being downloaded or processed now.", nil, nil)

	descSlots       = prometheus.NewDesc("gardend_request_slots_used", "Request slots (--max-concurrent) taken by requests being handled.", nil, nil)
	descSlotsLimit  = prometheus.NewDesc("gardend_request_slots_limit", "Request slots in all (--max-concurrent).", nil, nil)
	descConns       = prometheus.NewDesc("gardend_connections_open", "Connections open on the public listener.", nil, nil)
	descConnsLimit  = prometheus.NewDesc("gardend_connections_limit", "Connections the public listener keeps open at most (--max-conns).", nil, nil)
	descBodies      = prometheus.NewDesc("gardend_body_buffer_bytes", "Memory of request bodies read ahead of a request slot, as charged to their budget.", nil, nil)
	descBodiesLimit = prometheus.NewDesc("gardend_body_buffer_limit_bytes", "The budget of request bodies read ahead of a request slot.", nil, nil)
	descUploads     = prometheus.NewDesc("gardend_uploads_in_progress", "Image uploads holding an upload slot (--max-uploads).", nil, nil)
	descUploadLimit = prometheus.NewDesc("gardend_uploads_limit", "Upload slots in all (--max-uploads).", nil, nil)
	descReady       = prometheus.NewDesc("gardend_ready", "1 while every required readiness check passes (what GET /readyz answers 200 for), else 0.", nil, nil)
	descTiles       = prometheus.NewDesc("gardend_tile_queue_jobs", "Garden pictures whose thumbnail, preview and tiles are being built, by state: queued, building.", []string{"state"}, nil)
	descCheck       = prometheus.NewDesc("gardend_readiness_check_ok", "1 while the readiness check passes, else 0; an optional check (spatial) does not make the server unready.", []string{"check", "optional"}, nil)
)

func (c sourceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descHashing, descWaiting, descHits, descCollapsed, descQueue, descInFlight,
		descSlots, descSlotsLimit, descConns, descConnsLimit, descBodies, descBodiesLimit, descUploads, descUploadLimit,
		descReady, descCheck, descTiles} {
		ch <- d
	}
}

func (c sourceCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	src := c.m.src
	c.m.mu.Unlock()
	if src.Hashing != nil {
		h, w := src.Hashing()
		ch <- prometheus.MustNewConstMetric(descHashing, prometheus.GaugeValue, float64(h))
		ch <- prometheus.MustNewConstMetric(descWaiting, prometheus.GaugeValue, float64(w))
	}
	if src.SpatialCache != nil {
		hits, collapsed := src.SpatialCache()
		ch <- prometheus.MustNewConstMetric(descHits, prometheus.CounterValue, float64(hits))
		ch <- prometheus.MustNewConstMetric(descCollapsed, prometheus.CounterValue, float64(collapsed))
	}
	if src.Tiles != nil {
		queued, building := src.Tiles()
		ch <- prometheus.MustNewConstMetric(descTiles, prometheus.GaugeValue, float64(queued), "queued")
		ch <- prometheus.MustNewConstMetric(descTiles, prometheus.GaugeValue, float64(building), "building")
	}
	if src.Capacity != nil {
		c := src.Capacity()
		gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
		gauge(descSlots, float64(c.RequestSlots))
		gauge(descSlotsLimit, float64(c.RequestSlotsLimit))
		gauge(descConns, float64(c.Connections))
		gauge(descConnsLimit, float64(c.ConnectionsLimit))
		gauge(descBodies, float64(c.BodyBytes))
		gauge(descBodiesLimit, float64(c.BodyBytesLimit))
		gauge(descUploads, float64(c.Uploads))
		gauge(descUploadLimit, float64(c.UploadsLimit))
	}
	if src.Readiness != nil {
		ready := 1.0
		for _, c := range src.Readiness() {
			ok := 0.0
			if c.OK {
				ok = 1
			} else if !c.Optional {
				ready = 0
			}
			ch <- prometheus.MustNewConstMetric(descCheck, prometheus.GaugeValue, ok, c.Name, strconv.FormatBool(c.Optional))
		}
		ch <- prometheus.MustNewConstMetric(descReady, prometheus.GaugeValue, ready)
	}
	if src.CloudQueue != nil {
		pending, failed, inFlight, err := src.CloudQueue()
		if err != nil {
			ch <- prometheus.NewInvalidMetric(descQueue, err)
			return
		}
		ch <- prometheus.MustNewConstMetric(descQueue, prometheus.GaugeValue, float64(pending), "pending")
		ch <- prometheus.MustNewConstMetric(descQueue, prometheus.GaugeValue, float64(failed), "failed")
		ch <- prometheus.MustNewConstMetric(descInFlight, prometheus.GaugeValue, float64(inFlight))
	}
}

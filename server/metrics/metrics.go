// Package metrics is gardend's Prometheus instrumentation: one set of instruments per
// server, built by the server and handed what it observes, served in the Prometheus
// text exposition format (version 0.0.4). The leaves (store, spatial) know nothing of
// it; they take plain observer functions that the server connects here.
//
// It is written by hand rather than with the Prometheus client library: gardend needs
// counters, histograms and gauges read at scrape time, which take a few hundred lines,
// while the library added about 1 MiB to the binary, a millisecond of start-up and a
// labelled lookup on every request. Each route's instruments are resolved once, when
// the routes are built (Route), so counting a request is a few atomic additions.
package metrics

import (
	"bufio"
	"cmp"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
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
	// Capacity: what the server's limits hold now.
	Capacity func() Capacity
	// Readiness runs the readiness checks (each bounded in time by the server).
	Readiness func() []Check
	// History: the background reader's lease and reads, and what was recorded.
	History func() History
	// Tiles: garden pictures queued for tiling, and being tiled now.
	Tiles func() (queued, building int)
}

// History is what history's reader and recorder did since start.
type History struct {
	// Holding: this node holds the background reader's lease.
	Holding bool
	// BedsRead and BedsFailed count the background reader's reads of beds.
	BedsRead, BedsFailed int64
	// Recorded and Skipped count readings (from any read of a bed) handed to the
	// store, and those skipped as what this node recorded last.
	Recorded, Skipped int64
	// BedPoints and PlantPoints count the points kept.
	BedPoints, PlantPoints int64
	// Raised and Closed count alerts.
	Raised, Closed int64
}

// Capacity is what the server's limits hold now, and the limits.
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

// Bucket bounds (seconds) of the histograms.
var (
	requestBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}
	spatialBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 120}
	txBuckets      = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1}
)

// Metrics holds the instruments.
type Metrics struct {
	build Build

	routesMu sync.Mutex
	routes   map[routeKey]*Route
	// unmatched are the Routes of requests no route took, by method.
	unmatched map[string]*Route

	logins  [loginOutcomes]atomic.Uint64
	spatial labelled[histogram] // by gRPC method and code
	txRead  *histogram
	txWrite *histogram

	mu   sync.Mutex
	src  Sources
	sync func() (SyncSnapshot, error) // sync.go; nil without sync
}

type routeKey struct{ method, route string }

// New builds the instruments.
func New(b Build) *Metrics {
	m := &Metrics{
		build:     b,
		routes:    map[routeKey]*Route{},
		unmatched: map[string]*Route{},
		txRead:    newHistogram(txBuckets),
		txWrite:   newHistogram(txBuckets),
	}
	m.spatial.make = func() *histogram { return newHistogram(spatialBuckets) }
	for method := range knownMethods {
		m.unmatched[method] = m.Route(method, "")
	}
	m.unmatched["other"] = m.Route("other", "")
	return m
}

// SetSources connects the values read at scrape time.
func (m *Metrics) SetSources(s Sources) {
	m.mu.Lock()
	m.src = s
	m.mu.Unlock()
}

// knownMethods bounds the method label: a client may send any token as a method.
var knownMethods = map[string]bool{
	"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "OPTIONS": true,
}

// Route is the instruments of one method and route pattern. Resolve it once, when the
// route is set up, and call Observe for each request.
type Route struct {
	method, route string
	latency       *histogram
	// codes counts answers by status code: few codes per route, read-mostly.
	codes sync.Map // int → *atomic.Uint64
}

// Route returns the instruments of method and route pattern ("" when no route took
// the request), the same ones for the same arguments.
func (m *Metrics) Route(method, route string) *Route {
	if !knownMethods[method] {
		method = "other"
	}
	if route == "" {
		route = "unmatched"
	}
	m.routesMu.Lock()
	defer m.routesMu.Unlock()
	k := routeKey{method, route}
	rt := m.routes[k]
	if rt == nil {
		rt = &Route{method: method, route: route, latency: newHistogram(requestBuckets)}
		m.routes[k] = rt
	}
	return rt
}

// Unmatched returns the instruments of a request of method that no route took.
func (m *Metrics) Unmatched(method string) *Route {
	if rt := m.unmatched[method]; rt != nil {
		return rt
	}
	return m.unmatched["other"]
}

// Observe counts one answered request.
func (rt *Route) Observe(status int, d time.Duration) {
	c, ok := rt.codes.Load(status)
	if !ok {
		c, _ = rt.codes.LoadOrStore(status, new(atomic.Uint64))
	}
	c.(*atomic.Uint64).Add(1)
	rt.latency.observe(d.Seconds())
}

// Login outcomes, the values of gardend_logins_total's outcome label.
const (
	loginSuccess = iota
	loginInvalid
	loginLimited
	loginError
	loginOutcomes
)

var loginOutcomeNames = [loginOutcomes]string{"success", "invalid", "limited", "error"}

// ObserveLogin counts a POST /login by its status code.
func (m *Metrics) ObserveLogin(status int) {
	outcome := loginInvalid
	switch {
	case status >= 200 && status < 300:
		outcome = loginSuccess
	case status == http.StatusTooManyRequests:
		outcome = loginLimited
	case status >= 500:
		outcome = loginError
	}
	m.logins[outcome].Add(1)
}

// ObserveSpatialCall records one RPC to the spatial server.
func (m *Metrics) ObserveSpatialCall(method, code string, d time.Duration) {
	m.spatial.get(method, code).observe(d.Seconds())
}

// ObserveTx records one store transaction.
func (m *Metrics) ObserveTx(write bool, d time.Duration) {
	if write {
		m.txWrite.observe(d.Seconds())
	} else {
		m.txRead.observe(d.Seconds())
	}
}

// histogram counts observations in fixed buckets, without locks.
type histogram struct {
	upper   []float64       // bucket upper bounds, ascending; +Inf is implicit
	counts  []atomic.Uint64 // per bucket (not cumulative); the last one is +Inf
	sumBits atomic.Uint64   // float64 bits of the sum
}

func newHistogram(upper []float64) *histogram {
	return &histogram{upper: upper, counts: make([]atomic.Uint64, len(upper)+1)}
}

func (h *histogram) observe(v float64) {
	h.counts[sort.SearchFloat64s(h.upper, v)].Add(1) // the first bound ≥ v: le semantics
	for {
		old := h.sumBits.Load()
		if h.sumBits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// labelled is a family of T by a pair of label values, made on first use.
type labelled[T any] struct {
	make func() *T
	m    sync.Map // [2]string → *T
}

func (l *labelled[T]) get(a, b string) *T {
	k := [2]string{a, b}
	if v, ok := l.m.Load(k); ok {
		return v.(*T)
	}
	v, _ := l.m.LoadOrStore(k, l.make())
	return v.(*T)
}

// each calls fn for every member, sorted by label values.
func (l *labelled[T]) each(fn func(a, b string, v *T)) {
	type entry struct {
		k [2]string
		v *T
	}
	var all []entry
	l.m.Range(func(k, v any) bool {
		all = append(all, entry{k.([2]string), v.(*T)})
		return true
	})
	slices.SortFunc(all, func(x, y entry) int {
		return cmp.Or(strings.Compare(x.k[0], y.k[0]), strings.Compare(x.k[1], y.k[1]))
	})
	for _, e := range all {
		fn(e.k[0], e.k[1], e.v)
	}
}

// Handler serves the instruments in the Prometheus text exposition format.
func (m *Metrics) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		bw := bufio.NewWriterSize(w, 32<<10)
		m.write(&expo{w: bw})
		_ = bw.Flush() // a client that went away: nothing to tell
	})
}

// write writes every family.
func (m *Metrics) write(e *expo) {
	m.writeRequests(e)
	e.family("gardend_logins_total", "counter",
		"POST /login outcomes: success, invalid (wrong credentials or malformed), limited (429: too many failures), error (5xx).")
	for i, name := range loginOutcomeNames {
		e.sample("gardend_logins_total", "", float64(m.logins[i].Load()), "outcome", name)
	}
	e.family("gardend_spatial_call_duration_seconds", "histogram",
		"Calls sent to the spatial data server (each attempt), by gRPC method and status code.")
	m.spatial.each(func(method, code string, h *histogram) {
		e.histogram("gardend_spatial_call_duration_seconds", h, "method", method, "code", code)
	})
	e.family("gardend_store_transaction_duration_seconds", "histogram",
		"Database transactions of store operations, by kind (read, write), the wait for the write lock included.")
	e.histogram("gardend_store_transaction_duration_seconds", m.txRead, "kind", "read")
	e.histogram("gardend_store_transaction_duration_seconds", m.txWrite, "kind", "write")
	e.family("gardend_build_info", "gauge", "Always 1; the labels say which gardend runs.")
	e.sample("gardend_build_info", "", 1, "goversion", m.build.Go, "revision", m.build.Revision, "version", m.build.Version)
	m.writeSources(e)
	writeRuntime(e)
	writeProcess(e)
}

func (m *Metrics) writeRequests(e *expo) {
	m.routesMu.Lock()
	routes := make([]*Route, 0, len(m.routes))
	for _, rt := range m.routes {
		routes = append(routes, rt)
	}
	m.routesMu.Unlock()
	slices.SortFunc(routes, func(a, b *Route) int {
		return cmp.Or(strings.Compare(a.route, b.route), strings.Compare(a.method, b.method))
	})
	e.family("gardend_http_requests_total", "counter",
		`HTTP requests answered, by method, route pattern ("unmatched" when no route took it) and status code.`)
	for _, rt := range routes {
		var codes []int
		rt.codes.Range(func(k, _ any) bool {
			codes = append(codes, k.(int))
			return true
		})
		slices.Sort(codes)
		for _, code := range codes {
			c, _ := rt.codes.Load(code)
			e.sample("gardend_http_requests_total", "", float64(c.(*atomic.Uint64).Load()),
				"method", rt.method, "route", rt.route, "code", strconv.Itoa(code))
		}
	}
	e.family("gardend_http_request_duration_seconds", "histogram",
		"Time from receiving a request to its last byte written, by method and route pattern.")
	for _, rt := range routes {
		if rt.latency.total() > 0 {
			e.histogram("gardend_http_request_duration_seconds", rt.latency, "method", rt.method, "route", rt.route)
		}
	}
}

func (m *Metrics) writeSources(e *expo) {
	m.mu.Lock()
	src, readSync := m.src, m.sync
	m.mu.Unlock()
	if readSync != nil {
		writeSync(e, readSync)
	}
	if src.Hashing != nil {
		h, w := src.Hashing()
		e.family("gardend_password_hashes_in_progress", "gauge", "Password hashes (login, registration) being computed now.")
		e.sample("gardend_password_hashes_in_progress", "", float64(h))
		e.family("gardend_password_hash_queue", "gauge", "Logins and registrations waiting for a hashing slot.")
		e.sample("gardend_password_hash_queue", "", float64(w))
	}
	if src.SpatialCache != nil {
		hits, collapsed := src.SpatialCache()
		e.family("gardend_spatial_cache_hits_total", "counter", "Spatial server answers served from the cache.")
		e.sample("gardend_spatial_cache_hits_total", "", float64(hits))
		e.family("gardend_spatial_calls_collapsed_total", "counter", "Spatial calls that joined an identical call in flight instead of being sent.")
		e.sample("gardend_spatial_calls_collapsed_total", "", float64(collapsed))
	}
	if src.Capacity != nil {
		c := src.Capacity()
		gauge := func(name, help string, v float64) {
			e.family(name, "gauge", help)
			e.sample(name, "", v)
		}
		gauge("gardend_request_slots_used", "Request slots (--max-concurrent) taken by requests being handled.", float64(c.RequestSlots))
		gauge("gardend_request_slots_limit", "Request slots in all (--max-concurrent).", float64(c.RequestSlotsLimit))
		gauge("gardend_connections_open", "Connections open on the public listener.", float64(c.Connections))
		gauge("gardend_connections_limit", "Connections the public listener keeps open at most (--max-conns).", float64(c.ConnectionsLimit))
		gauge("gardend_body_buffer_bytes", "Memory of request bodies read ahead of a request slot, as charged to their budget.", float64(c.BodyBytes))
		gauge("gardend_body_buffer_limit_bytes", "The budget of request bodies read ahead of a request slot.", float64(c.BodyBytesLimit))
		gauge("gardend_uploads_in_progress", "Image uploads holding an upload slot (--max-uploads).", float64(c.Uploads))
		gauge("gardend_uploads_limit", "Upload slots in all (--max-uploads).", float64(c.UploadsLimit))
	}
	if src.Readiness != nil {
		checks := src.Readiness()
		ready := 1.0
		e.family("gardend_readiness_check_ok", "gauge", "1 while the readiness check passes, else 0; an optional check (spatial) does not make the server unready.")
		for _, c := range checks {
			ok := 0.0
			if c.OK {
				ok = 1
			} else if !c.Optional {
				ready = 0
			}
			e.sample("gardend_readiness_check_ok", "", ok, "check", c.Name, "optional", strconv.FormatBool(c.Optional))
		}
		e.family("gardend_ready", "gauge", "1 while every required readiness check passes (what GET /readyz answers 200 for), else 0.")
		e.sample("gardend_ready", "", ready)
	}
	if src.History != nil {
		writeHistory(e, src.History())
	}
	if src.CloudQueue != nil {
		// A failed read leaves the families out of this scrape (the server logs it):
		// no value is better than a wrong one.
		if pending, failed, inFlight, err := src.CloudQueue(); err == nil {
			e.family("gardend_pointcloud_queue_jobs", "gauge", "Point-cloud downloads in the queue, by state: pending (due or backing off), failed (out of attempts).")
			e.sample("gardend_pointcloud_queue_jobs", "", float64(failed), "state", "failed")
			e.sample("gardend_pointcloud_queue_jobs", "", float64(pending), "state", "pending")
			e.family("gardend_pointcloud_downloads_in_progress", "gauge", "Point clouds being downloaded or processed now.")
			e.sample("gardend_pointcloud_downloads_in_progress", "", float64(inFlight))
		}
	}
	if src.Tiles != nil {
		queued, building := src.Tiles()
		e.family("gardend_tile_queue_jobs", "gauge", "Garden pictures whose thumbnail, preview and tiles are being built, by state: building, queued.")
		e.sample("gardend_tile_queue_jobs", "", float64(building), "state", "building")
		e.sample("gardend_tile_queue_jobs", "", float64(queued), "state", "queued")
	}
}

func (h *histogram) total() uint64 {
	var n uint64
	for i := range h.counts {
		n += h.counts[i].Load()
	}
	return n
}

// expo writes the text exposition format.
type expo struct {
	w   *bufio.Writer
	buf []byte
}

// family writes the HELP and TYPE lines of a family.
func (e *expo) family(name, typ, help string) {
	e.buf = append(e.buf[:0], "# HELP "...)
	e.buf = append(e.buf, name...)
	e.buf = append(e.buf, ' ')
	e.buf = appendEscaped(e.buf, help, false)
	e.buf = append(e.buf, "\n# TYPE "...)
	e.buf = append(e.buf, name...)
	e.buf = append(e.buf, ' ')
	e.buf = append(e.buf, typ...)
	e.buf = append(e.buf, '\n')
	_, _ = e.w.Write(e.buf) // a write error shows at the final Flush
}

// sample writes one line: name+suffix{labels} value. labels are name, value pairs;
// extra is one more pair written last (a bucket's le), or "".
func (e *expo) sample(name, suffix string, v float64, labels ...string) {
	e.sampleLe(name, suffix, v, "", labels...)
}

func (e *expo) sampleLe(name, suffix string, v float64, le string, labels ...string) {
	e.buf = append(e.buf[:0], name...)
	e.buf = append(e.buf, suffix...)
	if len(labels) > 0 || le != "" {
		e.buf = append(e.buf, '{')
		for i := 0; i+1 < len(labels); i += 2 {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.buf = append(e.buf, labels[i]...)
			e.buf = append(e.buf, `="`...)
			e.buf = appendEscaped(e.buf, labels[i+1], true)
			e.buf = append(e.buf, '"')
		}
		if le != "" {
			if len(labels) > 0 {
				e.buf = append(e.buf, ',')
			}
			e.buf = append(e.buf, `le="`...)
			e.buf = append(e.buf, le...)
			e.buf = append(e.buf, '"')
		}
		e.buf = append(e.buf, '}')
	}
	e.buf = append(e.buf, ' ')
	e.buf = appendFloat(e.buf, v)
	e.buf = append(e.buf, '\n')
	_, _ = e.w.Write(e.buf)
}

// histogram writes the cumulative buckets, the sum and the count of h.
func (e *expo) histogram(name string, h *histogram, labels ...string) {
	var cum uint64
	for i, upper := range h.upper {
		cum += h.counts[i].Load()
		e.sampleLe(name, "_bucket", float64(cum), strconv.FormatFloat(upper, 'g', -1, 64), labels...)
	}
	cum += h.counts[len(h.upper)].Load()
	e.sampleLe(name, "_bucket", float64(cum), "+Inf", labels...)
	e.sample(name, "_sum", math.Float64frombits(h.sumBits.Load()), labels...)
	e.sample(name, "_count", float64(cum), labels...)
}

func appendFloat(b []byte, v float64) []byte {
	switch {
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	case math.IsNaN(v):
		return append(b, "NaN"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// appendEscaped escapes backslashes and line feeds (HELP text), and double quotes in
// label values, as the format asks.
func appendEscaped(b []byte, s string, quote bool) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, `\\`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '"' && quote:
			b = append(b, `\"`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

func writeHistory(e *expo, h History) {
	held := 0.0
	if h.Holding {
		held = 1
	}
	e.family("gardend_history_lease_held", "gauge", "1 while this node holds the lease of the background reader (one node of a cluster reads the beds), else 0.")
	e.sample("gardend_history_lease_held", "", held)
	e.family("gardend_history_background_reads_total", "counter", "Beds read by the background reader (--scan-interval), by outcome.")
	e.sample("gardend_history_background_reads_total", "", float64(h.BedsRead), "outcome", "ok")
	e.sample("gardend_history_background_reads_total", "", float64(h.BedsFailed), "outcome", "failed")
	e.family("gardend_history_readings_total", "counter", "Reads of a bed (requests and the background reader) handed to the store (recorded), or skipped as what this node recorded last (skipped).")
	e.sample("gardend_history_readings_total", "", float64(h.Recorded), "outcome", "recorded")
	e.sample("gardend_history_readings_total", "", float64(h.Skipped), "outcome", "skipped")
	e.family("gardend_history_points_total", "counter", "History points kept, of beds and of plants.")
	e.sample("gardend_history_points_total", "", float64(h.BedPoints), "of", "bed")
	e.sample("gardend_history_points_total", "", float64(h.PlantPoints), "of", "plant")
	e.family("gardend_alerts_changes_total", "counter", "Alerts raised and closed by the measurements this node recorded (a change of thresholds is not counted).")
	e.sample("gardend_alerts_changes_total", "", float64(h.Raised), "change", "raised")
	e.sample("gardend_alerts_changes_total", "", float64(h.Closed), "change", "closed")
}

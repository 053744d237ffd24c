package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/rs/zerolog"
)

// newInternalServer is a Server on a temporary data directory with cheap hashing;
// edit adjusts the config. Its indexes are checked at cleanup.
func newInternalServer(t *testing.T, edit func(*Config)) *Server {
	t.Helper()
	cfg := Config{DataDir: t.TempDir(), Logger: zerolog.Nop(), Argon2: internalArgon2}
	if edit != nil {
		edit(&cfg)
	}
	s, err := newForTest(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.store.CheckIndexes(); err != nil {
			t.Errorf("index check: %v", err)
		}
		s.Close()
	})
	return s
}

// gate holds handlers until released and counts those inside.
type gate struct {
	entered chan struct{}
	release chan struct{}
}

func newGate() *gate { return &gate{entered: make(chan struct{}, 16), release: make(chan struct{})} }

func (g *gate) handler(then func(w http.ResponseWriter, r *http.Request)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if then != nil {
			then(w, r)
		}
		g.entered <- struct{}{}
		<-g.release
		w.WriteHeader(http.StatusNoContent)
	})
}

// readyzOf asks the admin socket's /readyz (every check, with its figures) and
// checks that the public /readyz says the same with names only.
func readyzOf(t *testing.T, s *Server) (int, map[string]string) {
	t.Helper()
	rec := httptest.NewRecorder()
	s.adminHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	var doc readiness
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatalf("readyz body %q: %v", rec.Body, err)
	}
	checks := map[string]string{"": doc.Status}
	var failing []string
	for name, c := range doc.Checks {
		checks[name] = c.Status + ": " + c.Detail
		if c.Status != "ok" && !c.Optional {
			failing = append(failing, name)
		}
	}
	slices.Sort(failing)

	pub := httptest.NewRecorder()
	s.Handler().ServeHTTP(pub, httptest.NewRequest("GET", "/readyz", nil))
	want, _ := json.Marshal(publicReadiness{Status: doc.Status, Failing: failing})
	if pub.Code != rec.Code || strings.TrimSpace(pub.Body.String()) != string(want) {
		t.Fatalf("public readyz %d %s beside the admin socket's %d %s", pub.Code, pub.Body, rec.Code, rec.Body)
	}
	return rec.Code, checks
}

// TestRequestSlotCap: with every slot taken by a handler at work, the next request is
// 503 at once with Retry-After, /healthz still answers and /readyz says why it fails.
func TestRequestSlotCap(t *testing.T) {
	s := newInternalServer(t, func(c *Config) { c.MaxConcurrent = 2 })
	g := newGate()
	h := s.observe(s.bufferBody(s.requestSlot(g.handler(nil))))

	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/work", strings.NewReader("{}")))
		})
		<-g.entered
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/work", nil))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "1" {
		t.Fatalf("third request: %d, Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
	}
	code, checks := readyzOf(t, s)
	if code != http.StatusServiceUnavailable || checks[""] != "not ready" || checks["requests"] != "failing: 2 of 2 request slots in use" {
		t.Fatalf("readyz while saturated: %d %v", code, checks)
	}
	live := httptest.NewRecorder()
	s.Handler().ServeHTTP(live, httptest.NewRequest("HEAD", "/healthz", nil))
	if live.Code != http.StatusOK {
		t.Fatalf("healthz while saturated: %d", live.Code)
	}

	close(g.release)
	wg.Wait()
	if code, checks := readyzOf(t, s); code != http.StatusOK || checks["requests"] != "ok: 0 of 2 request slots in use" {
		t.Fatalf("readyz after: %d %v", code, checks)
	}
}

// TestReleaseSlot: a handler that only sends what is left gives its slot back.
func TestReleaseSlot(t *testing.T) {
	s := newInternalServer(t, func(c *Config) { c.MaxConcurrent = 1 })
	g := newGate()
	h := s.observe(s.requestSlot(g.handler(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/download" {
			s.releaseSlot(r)
			s.releaseSlot(r) // twice is harmless
		}
	})))
	done := make(chan struct{})
	go func() { h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/download", nil)); close(done) }()
	<-g.entered
	if n := len(s.cap.slots); n != 0 {
		t.Fatalf("%d slots held by a released download", n)
	}
	go h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/work", nil))
	<-g.entered // it got the slot
	close(g.release)
	<-done
}

// TestBodyBudget: bodies read ahead of a slot share a budget; beyond it 503, and what
// they took is given back.
func TestBodyBudget(t *testing.T) {
	s := newInternalServer(t, func(c *Config) { c.BodyBufferBytes = 4 << 10 })
	var got []byte
	h := s.observe(s.bufferBody(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
	})))
	for _, tc := range []struct {
		name     string
		body     string
		declared bool
		want     int
	}{
		{"small", `{"a":1}`, true, http.StatusOK},
		{"small, chunked", `{"a":1}`, false, http.StatusOK},
		{"3 KiB, chunked", strings.Repeat("x", 3<<10), false, http.StatusOK},
		{"over the budget", strings.Repeat("x", 5<<10), true, http.StatusServiceUnavailable},
		{"over the budget, chunked", strings.Repeat("x", 5<<10), false, http.StatusServiceUnavailable},
		{"broken connection", "", false, http.StatusBadRequest},
	} {
		got = nil
		var body io.Reader = strings.NewReader(tc.body)
		if tc.name == "broken connection" {
			body = iotest.ErrReader(errors.New("connection reset by peer"))
		}
		req := httptest.NewRequest("POST", "/x", io.MultiReader(body))
		if tc.declared {
			req.ContentLength = int64(len(tc.body))
		} else {
			req.ContentLength = -1
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, rec.Code, tc.want)
		}
		if tc.want == http.StatusOK && string(got) != tc.body {
			t.Errorf("%s: the handler read %d bytes, want %d", tc.name, len(got), len(tc.body))
		}
		if used := s.cap.bodies.used.Load(); used != 0 {
			t.Errorf("%s: %d bytes still charged", tc.name, used)
		}
	}
}

// arrivingBody hands out a body in the chunks it is given, checking at every read
// that finds nothing left what the budget holds for it; it then signals asked and
// blocks until the test sends more (or closes chunks: the end).
type arrivingBody struct {
	t       *testing.T
	budget  *bodyBudget
	chunks  chan []byte
	asked   chan struct{}
	pending []byte
	arrived int64
}

func (b *arrivingBody) Read(p []byte) (int, error) {
	if len(b.pending) == 0 {
		// What is charged now is for bytes that came: at most twice them beyond the
		// free buffer, and nothing for a body of which nothing came.
		if used := b.budget.used.Load(); used > max(0, 2*b.arrived-bodyFreeBytes) {
			b.t.Errorf("%d bytes charged after %d arrived", used, b.arrived)
		}
		b.asked <- struct{}{}
		chunk, ok := <-b.chunks
		if !ok {
			return 0, io.EOF
		}
		b.pending = chunk
	}
	n := copy(p, b.pending)
	b.pending = b.pending[n:]
	b.arrived += int64(n)
	return n, nil
}

// TestBodyBudgetChargesArrivals: a body declaring 1 MiB is charged only as its bytes
// come, and the whole charge is given back once it has been handled.
func TestBodyBudgetChargesArrivals(t *testing.T) {
	s := newInternalServer(t, nil)
	body := &arrivingBody{t: t, budget: s.cap.bodies, chunks: make(chan []byte), asked: make(chan struct{})}
	var got int
	h := s.bufferBody(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = len(b)
	}))
	req := httptest.NewRequest("POST", "/login", body)
	req.ContentLength = 1 << 20
	done := make(chan struct{})
	go func() { h.ServeHTTP(httptest.NewRecorder(), req); close(done) }()
	<-body.asked
	if used := s.cap.bodies.used.Load(); used != 0 {
		t.Fatalf("%d bytes charged for a body of which nothing came", used)
	}
	for sent := 0; sent < 1<<20; {
		chunk := make([]byte, min(700, 1<<20-sent))
		body.chunks <- chunk
		sent += len(chunk)
		<-body.asked
	}
	if used := s.cap.bodies.used.Load(); used != 1<<20+1-bodyFreeBytes {
		t.Errorf("%d bytes charged for 1 MiB read", used)
	}
	close(body.chunks)
	<-done
	if used := s.cap.bodies.used.Load(); got != 1<<20 || used != 0 {
		t.Fatalf("the handler read %d bytes; %d still charged", got, used)
	}
}

// TestBodyBudgetShares: one client address holds at most its share of the budget
// (here an eighth of 64 KiB: bodies trickled from one address cannot take the whole);
// the next body from it is 503 while another address's is read.
func TestBodyBudgetShares(t *testing.T) {
	s := newInternalServer(t, func(c *Config) { c.BodyBufferBytes, c.MaxBodyBytes = 64<<10, 4<<10 })
	if s.cap.bodies.perAddr != 8<<10 {
		t.Fatalf("share %d", s.cap.bodies.perAddr)
	}
	h := s.bufferBody(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	post := func(remote string, body io.Reader, length int64) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/x", body)
		req.RemoteAddr, req.ContentLength = remote, length
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	// A body of 7 KiB from 192.0.2.1 whose last bytes do not come yet: its buffer
	// grew to 7 KiB + 1, 6 KiB + 1 of it charged.
	held := &arrivingBody{t: t, budget: s.cap.bodies, chunks: make(chan []byte), asked: make(chan struct{})}
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- post("192.0.2.1:1000", held, 7<<10) }()
	<-held.asked
	for _, n := range []int{1 << 10, 1 << 10, 2 << 10, 2<<10 - 1} {
		held.chunks <- make([]byte, n)
		<-held.asked
	}
	if used := s.cap.bodies.used.Load(); used != 6<<10+1 {
		t.Fatalf("%d charged", used)
	}
	three := strings.Repeat("x", 3<<10) // charges 2 KiB + 1
	if rec := post("192.0.2.1:1001", strings.NewReader(three), 3<<10); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("a second body from the address beyond its share: %d", rec.Code)
	}
	if rec := post("[2001:db8::1]:1000", strings.NewReader(three), 3<<10); rec.Code != http.StatusOK {
		t.Errorf("a body from another address: %d %s", rec.Code, rec.Body)
	}
	if rec := post("192.0.2.1:1002", strings.NewReader(`{"small":1}`), 11); rec.Code != http.StatusOK {
		t.Errorf("a small body from the address at its share: %d %s", rec.Code, rec.Body)
	}
	held.chunks <- []byte("x")
	<-held.asked
	close(held.chunks)
	if rec := <-done; rec.Code != http.StatusOK {
		t.Fatalf("the held body: %d %s", rec.Code, rec.Body)
	}
	if used, addrs := s.cap.bodies.used.Load(), len(s.cap.bodies.byAddr); used != 0 || addrs != 0 {
		t.Fatalf("%d bytes, %d addresses still charged", used, addrs)
	}
}

// TestSlowUploadGivesWay: at the cap, an upload that has fallen behind --body-min-rate
// since it took its slot gives it to the newcomer (408 for it); one that keeps the
// pace, or holds its slot for less than the grace, does not.
func TestSlowUploadGivesWay(t *testing.T) {
	u := newUploadSlots(1, 1<<10)
	now := time.Now()
	for _, tc := range []struct {
		name     string
		age      time.Duration
		received int64
		behind   bool
	}{
		{"within the grace", uploadGrace / 2, 0, false},
		{"silent past the grace", uploadGrace + time.Second, 0, true},
		{"trickling", uploadGrace + 10*time.Second, 1 << 10, true},
		{"keeping the pace", uploadGrace + 10*time.Second, 10 << 10, false},
	} {
		h := &uploadHold{since: now.Add(-tc.age)}
		h.received.Store(tc.received)
		if got := h.behind(now, u.grace, u.rate); got != tc.behind {
			t.Errorf("%s: behind %v", tc.name, got)
		}
	}

	// Through the handler: the first upload has sent the start of its body and
	// stalls; its slot is as old as a minute.
	s := newInternalServer(t, func(c *Config) { c.MaxUploads = 1 })
	admin := registerInternal(t, s, "admin")
	path := internalGarden(t, s, admin) + "/image"
	stalled := &arrivingBody{t: t, budget: s.cap.bodies, chunks: make(chan []byte), asked: make(chan struct{})}
	req := httptest.NewRequest("POST", path, stalled)
	req.Header.Set("Authorization", "Token "+admin)
	first := make(chan *httptest.ResponseRecorder)
	go func() {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		first <- rec
	}()
	<-stalled.asked
	stalled.chunks <- []byte(`{"image":"data:image/png;base64,iVBO`)
	<-stalled.asked // it holds the slot and waits for more
	s.cap.uploads.mu.Lock()
	if len(s.cap.uploads.held) != 1 {
		t.Fatalf("%d slots held", len(s.cap.uploads.held))
	}
	s.cap.uploads.held[0].since = time.Now().Add(-time.Minute)
	// Without a connection underneath nothing can cut its read short: the test ends
	// it as the client would, with its next bytes.
	s.cap.uploads.held[0].cut = func() { go func() { stalled.chunks <- []byte("R") }() }
	s.cap.uploads.mu.Unlock()

	png, err := os.ReadFile("../testdata/images/garden.png")
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := json.Marshal(map[string]any{"image": "data:image/png;base64," + base64.StdEncoding.EncodeToString(png),
		"coordinates": []map[string]any{{"name": "top_left", "latitude": 52.52, "longitude": 13.40},
			{"name": "top_right", "latitude": 52.52, "longitude": 13.41}, {"name": "bottom_left", "latitude": 52.51, "longitude": 13.40},
			{"name": "bottom_right", "latitude": 52.51, "longitude": 13.41}}})
	rec := httptest.NewRecorder()
	next := httptest.NewRequest("POST", path, bytes.NewReader(doc))
	next.Header.Set("Authorization", "Token "+admin)
	s.Handler().ServeHTTP(rec, next)
	if rec.Code != http.StatusCreated {
		t.Fatalf("the newcomer: %d %s", rec.Code, rec.Body)
	}
	if got := <-first; got.Code != http.StatusRequestTimeout || !strings.Contains(got.Body.String(), "gave its slot to another") {
		t.Fatalf("the stalled upload: %d %s", got.Code, got.Body)
	}
	if n := s.cap.uploads.inUse(); n != 0 {
		t.Fatalf("%d slots held after both", n)
	}
}

// registerInternal registers username through s's handler and returns its token.
func registerInternal(t *testing.T, s *Server, username string) string {
	t.Helper()
	var v struct{ Token string }
	internalCall(t, s, "POST", "/register", "", map[string]string{
		"username": username, "password": "pw-of-" + username, "first_name": "F", "last_name": "L"}, http.StatusCreated, &v)
	return v.Token
}

// internalGarden creates a company and a garden as token's user; it returns the
// garden's path.
func internalGarden(t *testing.T, s *Server, token string) string {
	t.Helper()
	var c, g struct{ ID uint64 }
	internalCall(t, s, "POST", "/companies", token, map[string]string{"name": "c"}, http.StatusCreated, &c)
	path := "/companies/" + strconv.FormatUint(c.ID, 10) + "/gardens"
	internalCall(t, s, "POST", path, token, map[string]string{"name": "g"}, http.StatusCreated, &g)
	return path + "/" + strconv.FormatUint(g.ID, 10)
}

func internalCall(t *testing.T, s *Server, method, path, token string, body any, want int, out any) {
	t.Helper()
	doc, _ := json.Marshal(body)
	req := httptest.NewRequest(method, path, bytes.NewReader(doc))
	if token != "" {
		req.Header.Set("Authorization", "Token "+token)
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	if rec.Code != want {
		t.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
	}
	if out != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
			t.Fatal(err)
		}
	}
}

// BenchmarkBufferBody measures reading a login's body ahead of its slot (the login
// path's share of bufferBody).
func BenchmarkBufferBody(b *testing.B) {
	s, err := newForTest(b, Config{DataDir: b.TempDir(), Logger: zerolog.Nop(), Argon2: internalArgon2})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	h := s.bufferBody(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	const body = `{"username":"ann","password":"pw-of-ann-123"}`
	sr := strings.NewReader(body)
	req := httptest.NewRequest("POST", "/login", sr)
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		sr.Reset(body)
		r := *req
		r.Body = io.NopCloser(sr)
		h.ServeHTTP(w, &r)
	}
}

// TestEndedUploadKeepsItsSlot: an upload whose whole body has arrived keeps its
// slot while it is processed (a photo waiting for the one decode), whatever its
// pace: a newcomer at the cap is told the server is busy at once. Before, it was
// preempted as "behind": that freed nothing (the newcomer got 503 a second later)
// and cut its connection's reads, which cancels its request and lost the photo
// its client had sent in full.
func TestEndedUploadKeepsItsSlot(t *testing.T) {
	u := newUploadSlots(1, 1<<10)
	cut := false
	first := &uploadHold{cut: func() { cut = true }}
	if err := u.take(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	body := &uploadBody{ReadCloser: io.NopCloser(strings.NewReader("a small photo")), hold: first, rate: u.rate}
	if _, err := io.ReadAll(body); err != nil {
		t.Fatal(err)
	}
	u.mu.Lock()
	first.since = time.Now().Add(-time.Minute) // long past the pace, processing
	u.mu.Unlock()
	if err := u.take(context.Background(), &uploadHold{cut: func() {}}); err != errUploadsBusy {
		t.Fatalf("a newcomer at the cap: %v, want errUploadsBusy", err)
	}
	if first.preempted.Load() || cut {
		t.Fatal("the upload whose body had ended was preempted and its reads cut")
	}
}

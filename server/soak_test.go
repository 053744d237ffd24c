package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gardend/gardend/imagestore"
	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/store"
)

// Soak test shape. GARDEND_SOAK sets the duration (CI: 60s); the default keeps
// `go test ./...` quick.
const (
	soakWorkers          = 32
	soakDefault          = 10 * time.Second
	soakMaxUsers         = 6 // per worker
	soakMaxCompanies     = 6 // per worker
	soakMaxGardens       = 3 // per company
	soakRequestTimeout   = 30 * time.Second
	soakMaxProblemsShown = 20
)

// pngWithText returns the PNG base (whose first chunk is IHDR, as the PNG spec
// requires) with a tEXt chunk holding text inserted after IHDR: a distinct, valid PNG
// per upload, so a download shows which upload it is.
func pngWithText(base []byte, text string) []byte {
	const sigLen, ihdrLen = 8, 8 + 13 + 4 // signature; IHDR length+type, data, CRC
	data := append([]byte("Comment\x00"), text...)
	chunk := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
	chunk = append(chunk, "tEXt"...)
	chunk = append(chunk, data...)
	chunk = binary.BigEndian.AppendUint32(chunk, crc32.ChecksumIEEE(chunk[4:]))
	out := append([]byte{}, base[:sigLen+ihdrLen]...)
	out = append(out, chunk...)
	return append(out, base[sigLen+ihdrLen:]...)
}

// soakCounts are the 201s (and other facts) the workers observed.
type soakCounts struct {
	requests, reads                   atomic.Int64
	users, companies, gardens         atomic.Int64
	companyGrants, gardenGrants       atomic.Int64 // 201s, overwrites included
	newCompanyGrants, newGardenGrants atomic.Int64 // distinct (resource, user) pairs
	uploads, widgets                  atomic.Int64
	gardensWithImage                  atomic.Int64
	maxLatency                        atomic.Int64 // nanoseconds
	dials                             atomic.Int64 // connections opened
}

// soak is the shared state of one soak run.
type soak struct {
	t      *testing.T
	base   string
	client *http.Client
	pngs   [][]byte
	counts soakCounts

	mu    sync.Mutex
	users []string // registered usernames: grant targets for every worker

	problems atomic.Int64
	stop     context.CancelFunc
}

// problem reports a failure; after a few it stops the run, one cause is usually enough.
func (s *soak) problem(format string, args ...any) {
	if n := s.problems.Add(1); n <= soakMaxProblemsShown {
		s.t.Errorf(format, args...)
	}
	s.stop()
}

// call sends one request and returns status and body; a transport error or a 5xx is
// a problem (reported, status 0 returned).
func (s *soak) call(method, path, token string, body []byte) (int, []byte) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	if err != nil {
		s.problem("%s %s: %v", method, path, err)
		return 0, nil
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Token "+token)
	}
	start := time.Now()
	res, err := s.client.Do(req)
	if err != nil {
		s.problem("%s %s: transport error: %v", method, path, err)
		return 0, nil
	}
	data, err := io.ReadAll(res.Body)
	res.Body.Close()
	d := int64(time.Since(start))
	for m := s.counts.maxLatency.Load(); d > m && !s.counts.maxLatency.CompareAndSwap(m, d); m = s.counts.maxLatency.Load() {
	}
	s.counts.requests.Add(1)
	if err != nil {
		s.problem("%s %s: reading the body: %v", method, path, err)
		return 0, nil
	}
	if res.StatusCode >= 500 {
		s.problem("%s %s: %d %s", method, path, res.StatusCode, data)
		return 0, nil
	}
	return res.StatusCode, data
}

// expect sends a request and decodes the answer into out (when not nil); any status but
// want is a problem. It reports whether the request went as expected.
func (s *soak) expect(want int, method, path, token string, body any, out any) bool {
	var raw []byte
	switch b := body.(type) {
	case nil:
	case []byte:
		raw = b
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			s.problem("encode %T: %v", b, err)
			return false
		}
	}
	code, data := s.call(method, path, token, raw)
	if code == 0 {
		return false
	}
	if code != want {
		s.problem("%s %s: status %d, want %d: %s", method, path, code, want, data)
		return false
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			s.problem("%s %s: decode %s: %v", method, path, data, err)
			return false
		}
	}
	return true
}

func (s *soak) addUser(name string) {
	s.mu.Lock()
	s.users = append(s.users, name)
	s.mu.Unlock()
}

func (s *soak) randomUser(rng *rand.Rand) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.users[rng.IntN(len(s.users))]
}

// Per-worker state: only its worker touches it, so expectations about it are exact.
type soakUser struct {
	name, token string
	widgets     []byte // last saved, nil before the first
}

type soakGarden struct {
	id     uint64
	image  []byte // last uploaded, nil before the first
	coords store.Coordinates
	grants map[string]bool
}

type soakCompany struct {
	id      uint64
	owner   *soakUser
	gardens []*soakGarden
	grants  map[string]bool
}

type soakWorker struct {
	s         *soak
	id        int
	rng       *rand.Rand
	users     []*soakUser
	companies []*soakCompany
	seq       int
}

func (w *soakWorker) run(deadline time.Time) {
	for time.Now().Before(deadline) && w.s.problems.Load() == 0 {
		w.seq++
		w.step()
	}
}

// step does one random operation; reads are about half of them.
func (w *soakWorker) step() {
	if len(w.users) == 0 {
		w.register()
		return
	}
	switch n := w.rng.IntN(100); {
	case n < 4:
		w.register()
	case n < 8:
		w.createCompany()
	case n < 14:
		w.createGarden()
	case n < 20:
		w.grantCompany()
	case n < 26:
		w.grantGarden()
	case n < 34:
		w.upload()
	case n < 42:
		w.saveWidgets()
	case n < 52:
		w.readUser()
	case n < 62:
		w.readGardens()
	case n < 76:
		w.readCompanyGardens()
	case n < 90:
		w.readImage()
	default:
		w.readWidgets()
	}
}

func (w *soakWorker) user() *soakUser { return w.users[w.rng.IntN(len(w.users))] }

func (w *soakWorker) company() *soakCompany {
	if len(w.companies) == 0 {
		return nil
	}
	return w.companies[w.rng.IntN(len(w.companies))]
}

func (w *soakWorker) garden() (*soakCompany, *soakGarden) {
	c := w.company()
	if c == nil || len(c.gardens) == 0 {
		return nil, nil
	}
	return c, c.gardens[w.rng.IntN(len(c.gardens))]
}

func (w *soakWorker) register() {
	if len(w.users) >= soakMaxUsers {
		w.readUser()
		return
	}
	name := fmt.Sprintf("soak-%d-%d", w.id, len(w.users))
	var res struct{ Token string }
	if w.s.expect(http.StatusCreated, "POST", "/register", "", map[string]string{
		"username": name, "password": "pw-of-" + name, "first_name": "Soak", "last_name": "Worker",
	}, &res) {
		w.users = append(w.users, &soakUser{name: name, token: res.Token})
		w.s.addUser(name)
		w.s.counts.users.Add(1)
	}
}

func (w *soakWorker) createCompany() {
	if len(w.companies) >= soakMaxCompanies {
		w.readGardens()
		return
	}
	u := w.user()
	var c store.Company
	name := fmt.Sprintf("company %d/%d", w.id, w.seq)
	if w.s.expect(http.StatusCreated, "POST", "/companies", u.token, map[string]string{"name": name}, &c) {
		if c.Name != name || c.ID == 0 {
			w.s.problem("created company %+v, want name %q", c, name)
			return
		}
		w.companies = append(w.companies, &soakCompany{id: c.ID, owner: u, grants: map[string]bool{}})
		w.s.counts.companies.Add(1)
	}
}

func (w *soakWorker) createGarden() {
	c := w.company()
	if c == nil || len(c.gardens) >= soakMaxGardens {
		w.createCompany()
		return
	}
	var g store.Garden
	name := fmt.Sprintf("garden %d/%d", w.id, w.seq)
	if w.s.expect(http.StatusCreated, "POST", companyPath(c.id)+"/gardens", c.owner.token, map[string]string{"name": name}, &g) {
		if g.Name != name || g.Company != c.id || g.ImagePath != nil {
			w.s.problem("created garden %+v, want %q in company %d", g, name, c.id)
			return
		}
		c.gardens = append(c.gardens, &soakGarden{id: g.ID, grants: map[string]bool{}})
		w.s.counts.gardens.Add(1)
	}
}

// target picks a grant target that is not the company's owner (that would be 403).
func (w *soakWorker) target(owner string) (string, bool) {
	for range 4 {
		if u := w.s.randomUser(w.rng); u != owner {
			return u, true
		}
	}
	return "", false
}

func (w *soakWorker) level() store.Level {
	if w.rng.IntN(2) == 0 {
		return store.LevelUser
	}
	return store.LevelAdmin
}

func (w *soakWorker) grantCompany() {
	c := w.company()
	if c == nil {
		w.createCompany()
		return
	}
	who, ok := w.target(c.owner.name)
	if !ok {
		return
	}
	level := w.level()
	var p struct {
		Username   string
		Permission store.Level
		Company    uint64
	}
	if w.s.expect(http.StatusCreated, "POST", companyPath(c.id)+"/createPermission", c.owner.token,
		map[string]string{"username": who, "permission": string(level)}, &p) {
		if p.Username != who || p.Permission != level || p.Company != c.id {
			w.s.problem("company grant answered %+v, want %s %s on %d", p, who, level, c.id)
		}
		w.s.counts.companyGrants.Add(1)
		if !c.grants[who] {
			c.grants[who] = true
			w.s.counts.newCompanyGrants.Add(1)
		}
	}
}

func (w *soakWorker) grantGarden() {
	c, g := w.garden()
	if g == nil {
		w.createGarden()
		return
	}
	who, ok := w.target(c.owner.name)
	if !ok {
		return
	}
	level := w.level()
	var p struct {
		Username   string
		Permission store.Level
		Garden     uint64
	}
	if w.s.expect(http.StatusCreated, "POST", gardenPath(c.id, g.id)+"/createPermission", c.owner.token,
		map[string]string{"username": who, "permission": string(level)}, &p) {
		if p.Username != who || p.Permission != level || p.Garden != g.id {
			w.s.problem("garden grant answered %+v, want %s %s on %d", p, who, level, g.id)
		}
		w.s.counts.gardenGrants.Add(1)
		if !g.grants[who] {
			g.grants[who] = true
			w.s.counts.newGardenGrants.Add(1)
		}
	}
}

func (w *soakWorker) upload() {
	c, g := w.garden()
	if g == nil {
		w.createGarden()
		return
	}
	png := pngWithText(w.s.pngs[w.rng.IntN(len(w.s.pngs))], fmt.Sprintf("worker %d upload %d", w.id, w.seq))
	lat := 52 + float64(w.seq)/1e4
	coords := store.Coordinates{
		{Name: "top_left", Latitude: lat, Longitude: 8},
		{Name: "top_right", Latitude: lat, Longitude: 8.001},
		{Name: "bottom_left", Latitude: lat - 0.001, Longitude: 8},
	}
	body := map[string]any{"image": imagestore.DataURLPrefix + base64.StdEncoding.EncodeToString(png), "coordinates": coords}
	var res struct {
		ImagePath string `json:"image_path"`
	}
	if w.s.expect(http.StatusCreated, "POST", gardenPath(c.id, g.id)+"/image", c.owner.token, body, &res) {
		if !strings.HasPrefix(res.ImagePath, server.ImageDirName+"/") {
			w.s.problem("upload answered image_path %q", res.ImagePath)
		}
		if g.image == nil {
			w.s.counts.gardensWithImage.Add(1)
		}
		g.image, g.coords = png, coords
		w.s.counts.uploads.Add(1)
	}
}

func (w *soakWorker) saveWidgets() {
	u := w.user()
	// Odd spacing on purpose: widgets are stored byte for byte.
	doc := fmt.Appendf(nil, `{"worker": %d,  "seq":%d, "panels": [%q , "map"]}`, w.id, w.seq, u.name)
	if w.s.expect(http.StatusCreated, "POST", "/user/widgets", u.token, doc, nil) {
		u.widgets = doc
		w.s.counts.widgets.Add(1)
	}
}

func (w *soakWorker) readUser() {
	u := w.user()
	var got store.User
	if w.s.expect(http.StatusOK, "GET", "/user", u.token, nil, &got) && got.Username != u.name {
		w.s.problem("GET /user as %s: %+v", u.name, got)
	}
	w.s.counts.reads.Add(1)
}

func (w *soakWorker) readGardens() {
	var gs []store.Garden
	w.s.expect(http.StatusOK, "GET", "/gardens", w.user().token, nil, &gs)
	w.s.counts.reads.Add(1)
}

// readCompanyGardens: only this worker creates gardens in its companies, so the owner
// sees exactly the ones it created.
func (w *soakWorker) readCompanyGardens() {
	c := w.company()
	if c == nil {
		w.readGardens()
		return
	}
	var gs []store.Garden
	if w.s.expect(http.StatusOK, "GET", companyPath(c.id)+"/gardens", c.owner.token, nil, &gs) {
		if len(gs) != len(c.gardens) {
			w.s.problem("company %d lists %d gardens, %d were created", c.id, len(gs), len(c.gardens))
		}
	}
	w.s.counts.reads.Add(1)
}

// readImage: the download is exactly the last upload, with its coordinates.
func (w *soakWorker) readImage() {
	c, g := w.garden()
	if g == nil {
		w.readUser()
		return
	}
	w.s.counts.reads.Add(1)
	path := gardenPath(c.id, g.id) + "/image"
	if g.image == nil {
		w.s.expect(http.StatusNotFound, "GET", path, c.owner.token, nil, nil)
		return
	}
	var doc struct {
		Image       string
		Coordinates store.Coordinates
	}
	if !w.s.expect(http.StatusOK, "GET", path, c.owner.token, nil, &doc) {
		return
	}
	data, err := imagestore.DecodeDataURL(doc.Image)
	if err != nil || !bytes.Equal(data, g.image) || fmt.Sprint(doc.Coordinates) != fmt.Sprint(g.coords) {
		w.s.problem("garden %d: download (%d bytes, %v, %v) is not the last upload (%d bytes, %v)", g.id, len(data), err, doc.Coordinates, len(g.image), g.coords)
	}
}

func (w *soakWorker) readWidgets() {
	u := w.user()
	code, data := w.s.call("GET", "/user/widgets", u.token, nil)
	w.s.counts.reads.Add(1)
	want := u.widgets
	if want == nil {
		want = []byte("{}")
	}
	if code != 0 && (code != http.StatusOK || !bytes.Equal(data, want)) {
		w.s.problem("GET /user/widgets as %s: %d %s, want %s", u.name, code, data, want)
	}
}

// errorLines counts log lines at level error (a 5xx, a failed file removal, …).
type errorLines struct {
	mu    sync.Mutex
	n     int
	first []string
}

func (e *errorLines) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(`"level":"error"`)) {
		e.mu.Lock()
		e.n++
		if len(e.first) < 5 {
			e.first = append(e.first, string(p))
		}
		e.mu.Unlock()
	}
	return len(p), nil
}

// TestSoak runs the whole server over real HTTP with keep-alive under many concurrent
// clients mixing reads and writes, then checks that nothing answered 5xx or failed in
// transport, that what was created adds up (through the API and in the store after
// shutdown), and that the database passes both consistency checks.
func TestSoak(t *testing.T) { soakOn(t, boltBackend, soakDefault) }

// TestSoakPostgres is the soak on PostgreSQL (GARDEND_SOAK sets its length too).
func TestSoakPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("soak test: skipped with -short")
	}
	soakOn(t, postgresBackend(t), soakDefault/2)
}

func soakOn(t *testing.T, b backend, duration time.Duration) {
	if testing.Short() {
		t.Skip("soak test: skipped with -short (set GARDEND_SOAK=60s for a long run)")
	}
	if v := os.Getenv("GARDEND_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("GARDEND_SOAK=%q: want a duration such as 60s", v)
		}
		duration = d
	}
	dir := t.TempDir()
	logs := &errorLines{}
	srv, err := newServerOn(t, b, server.Config{
		DataDir: dir, Addr: "127.0.0.1:0", Argon2: cheapArgon2, ShutdownTimeout: 10 * time.Second,
		Logger: zerolog.New(logs),
		// Every worker may upload at once: the soak checks consistency, not the limit.
		MaxUploads: soakWorkers,
		// Every worker registers from loopback.
		RegisterLimit: soakWorkers * soakMaxUsers, RegisterGlobalLimit: soakWorkers * soakMaxUsers,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	// A site administrator sees everything: the API side of the final count.
	hash, err := store.NewPasswords(cheapArgon2, 1).Hash(context.Background(), "pw-of-root")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Store().CreateUser(store.NewUser{Username: "root", FirstName: "Site", LastName: "Admin", PasswordHash: hash, SiteAdmin: true}); err != nil {
		t.Fatal(err)
	}
	ctx, cancelRun := context.WithCancel(context.Background())
	defer cancelRun()
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	select {
	case <-srv.Ready():
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}

	stopCtx, stop := context.WithCancel(context.Background())
	defer stop()
	s := &soak{
		t:    t,
		base: "http://" + srv.Addr(),
		pngs: [][]byte{fixture(t, "garden.png"), fixture(t, "garden-paletted.png")},
		stop: stop,
	}
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	s.client = &http.Client{
		Timeout: soakRequestTimeout,
		Transport: &http.Transport{
			MaxIdleConnsPerHost: soakWorkers, MaxIdleConns: soakWorkers, IdleConnTimeout: time.Minute,
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				s.counts.dials.Add(1)
				return dialer.DialContext(ctx, network, addr)
			},
		},
	}
	defer s.client.CloseIdleConnections()
	for _, png := range s.pngs {
		if _, _, err := imagestore.CheckPNG(pngWithText(png, "check")); err != nil {
			t.Fatalf("a fixture with a tEXt chunk is not a valid PNG: %v", err)
		}
	}
	var root struct{ Token string }
	if !s.expect(http.StatusOK, "POST", "/login", "", map[string]string{"username": "root", "password": "pw-of-root"}, &root) {
		t.FailNow()
	}

	start := time.Now()
	deadline := start.Add(duration)
	var wg sync.WaitGroup
	for i := range soakWorkers {
		w := &soakWorker{s: s, id: i, rng: rand.New(rand.NewPCG(uint64(i), uint64(start.UnixNano())))}
		wg.Go(func() { w.run(deadline) })
	}
	wg.Wait()
	elapsed := time.Since(start)
	c := &s.counts
	n := c.requests.Load()
	t.Logf("soak: %d workers for %v: %d requests (%d reads) over %d connections, %.0f requests/s, slowest %v",
		soakWorkers, elapsed.Round(time.Millisecond), n, c.reads.Load(), c.dials.Load(), float64(n)/elapsed.Seconds(),
		time.Duration(c.maxLatency.Load()).Round(time.Millisecond))
	t.Logf("soak: 201s: %d users, %d companies, %d gardens, %d company grants (%d distinct), %d garden grants (%d distinct), %d uploads, %d widgets",
		c.users.Load(), c.companies.Load(), c.gardens.Load(), c.companyGrants.Load(), c.newCompanyGrants.Load(),
		c.gardenGrants.Load(), c.newGardenGrants.Load(), c.uploads.Load(), c.widgets.Load())
	if t.Failed() {
		return
	}
	if stopCtx.Err() != nil {
		t.Fatal("the run was stopped by a problem")
	}
	if n < soakWorkers {
		t.Fatalf("only %d requests", n)
	}
	// Keep-alive: a connection per worker (a few more are fine), not one per request.
	if d := c.dials.Load(); d > 2*soakWorkers {
		t.Errorf("%d connections for %d requests: keep-alive is not working", d, n)
	}

	// Through the API, while the server runs: a site admin sees every record.
	var companies []store.Company
	var gardens []store.Garden
	s.expect(http.StatusOK, "GET", "/companies", root.Token, nil, &companies)
	s.expect(http.StatusOK, "GET", "/gardens", root.Token, nil, &gardens)
	if int64(len(companies)) != c.companies.Load() || int64(len(gardens)) != c.gardens.Load() {
		t.Errorf("API lists %d companies and %d gardens; %d and %d were created", len(companies), len(gardens), c.companies.Load(), c.gardens.Load())
	}
	apiCompanyPerms, apiGardenPerms, apiImages := 0, 0, 0
	for _, co := range companies {
		var ps []store.Permission
		s.expect(http.StatusOK, "GET", companyPath(co.ID)+"/permissions", root.Token, nil, &ps)
		apiCompanyPerms += len(ps)
	}
	for _, g := range gardens {
		var ps []store.Permission
		s.expect(http.StatusOK, "GET", gardenPath(g.Company, g.ID)+"/permissions", root.Token, nil, &ps)
		apiGardenPerms += len(ps)
		if g.ImagePath != nil {
			apiImages++
		}
	}
	// Each company's creator is its admin, besides the grants.
	wantCompanyPerms := c.companies.Load() + c.newCompanyGrants.Load()
	if int64(apiCompanyPerms) != wantCompanyPerms || int64(apiGardenPerms) != c.newGardenGrants.Load() || int64(apiImages) != c.gardensWithImage.Load() {
		t.Errorf("API lists %d company permissions, %d garden permissions, %d gardens with an image; want %d, %d, %d",
			apiCompanyPerms, apiGardenPerms, apiImages, wantCompanyPerms, c.newGardenGrants.Load(), c.gardensWithImage.Load())
	}

	// After a graceful shutdown, in the store.
	cancelRun()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	st := srv.Store()
	users, err := st.ListUsers()
	if err != nil {
		t.Fatal(err)
	}
	storedCompanies, err := st.Companies()
	if err != nil {
		t.Fatal(err)
	}
	storedGardens, err := st.Gardens()
	if err != nil {
		t.Fatal(err)
	}
	perms, err := st.ListPermissions()
	if err != nil {
		t.Fatal(err)
	}
	paths, err := st.ImagePaths()
	if err != nil {
		t.Fatal(err)
	}
	images := 0 // image files, or with PostgreSQL the images stored in it
	if shared, ok := st.(store.Shared); ok {
		for p := range paths {
			rc, _, err := shared.OpenImage(context.Background(), p)
			if err != nil {
				t.Errorf("image %s: %v", p, err)
				continue
			}
			rc.Close()
			images++
		}
	} else {
		files, err := os.ReadDir(filepath.Join(dir, server.ImageDirName))
		if err != nil {
			t.Fatal(err)
		}
		images = len(files)
	}
	got := fmt.Sprintf("%d users, %d companies, %d gardens, %d company permissions, %d garden permissions, %d image paths, %d image files",
		len(users), len(storedCompanies), len(storedGardens), len(perms.Company), len(perms.Garden), len(paths), images)
	want := fmt.Sprintf("%d users, %d companies, %d gardens, %d company permissions, %d garden permissions, %d image paths, %d image files",
		c.users.Load()+1, c.companies.Load(), c.gardens.Load(), wantCompanyPerms, c.newGardenGrants.Load(), c.gardensWithImage.Load(), c.gardensWithImage.Load())
	if got != want {
		t.Errorf("store holds %s;\nwant %s", got, want)
	}
	if err := st.Check(); err != nil {
		t.Errorf("storage check: %v", err)
	}
	if err := st.CheckIndexes(); err != nil {
		t.Errorf("index check: %v", err)
	}
	if logs.n > 0 {
		t.Errorf("%d error log lines, first: %s", logs.n, strings.Join(logs.first, ""))
	}
}

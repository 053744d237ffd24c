//go:build unix

package cli_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gardend/gardend/imagestore"
	"github.com/gardend/gardend/store"
)

// The ledger is the crash test's model of what gardend must hold: every write the
// test sent, as acknowledged or still in flight when the process was killed. Each
// worker owns its users, companies and gardens, and writes each value in sequence, so
// "the last acknowledged write" is well defined without any cross-worker ordering.

// maybe is one value the test writes: the last acknowledged one and, when a write was
// in flight at the kill, the one it would have set. "" means absent.
type maybe struct {
	acked   string
	pending *string
}

// begin records a write about to be sent; ack its 2xx.
func (m *maybe) begin(v string) { m.pending = &v }
func (m *maybe) ack(v string)   { m.acked, m.pending = v, nil }

// allows reports whether v is what the last acknowledged write or the one in flight
// set.
func (m *maybe) allows(v string) bool { return v == m.acked || (m.pending != nil && *m.pending == v) }

// settle makes v, found after a restart, the acknowledged value, and says what became
// of a write in flight: applied (+1), not applied (-1), or there was none or no telling
// (0).
func (m *maybe) settle(v string) int {
	outcome := 0
	if m.pending != nil && *m.pending != m.acked {
		switch v {
		case *m.pending:
			outcome = 1
		case m.acked:
			outcome = -1
		}
	}
	m.acked, m.pending = v, nil
	return outcome
}

func (m *maybe) String() string {
	if m.pending == nil {
		return fmt.Sprintf("%.40q", m.acked)
	}
	return fmt.Sprintf("%.40q or (in flight) %.40q", m.acked, *m.pending)
}

type crashUser struct {
	name, password string
	token          string // from the last acknowledged register or login
	round          int    // registered in
	exists         maybe  // "1" once registered
	widgets        maybe  // the document; "" before the first
}

type crashCompany struct {
	id      uint64 // 0 until known
	name    string
	owner   *crashUser
	exists  maybe
	gardens []*crashGarden
	perms   map[string]*maybe // by username: "u", "a" or ""
}

type crashGarden struct {
	id     uint64
	name   string
	exists maybe
	perms  map[string]*maybe
	image  maybe // the upload's key
	path   string
}

type crashUpload struct {
	png    []byte
	coords store.Coordinates
}

type crashWorker struct {
	l         *crashLedger
	id        int
	rng       *rand.Rand
	users     []*crashUser
	companies []*crashCompany
	round     int
	seq       int
	logins    int
}

type crashLedger struct {
	t       *testing.T
	dir     string
	pngs    [][]byte
	workers []*crashWorker
	uploads sync.Map // key → *crashUpload

	// Per round.
	base     string
	client   *http.Client
	mu       sync.Mutex
	targets  []string // usernames known to exist: grant targets
	killed   atomic.Bool
	acked    atomic.Int64
	inFlight atomic.Int64
	// What verify found of the writes in flight at the kills.
	applied, notApplied int
}

// Per-worker limits keep rounds alike however many there are.
const (
	crashMaxCompanies = 3
	crashMaxGardens   = 3 // per company
	crashMaxLogins    = 1 // per round: real argon2 costs tens of milliseconds
	crashMaxOps       = 5000
)

func newCrashLedger(t *testing.T, rng *rand.Rand, dir string) *crashLedger {
	l := &crashLedger{t: t, dir: dir}
	for _, name := range []string{"garden.png", "garden-paletted.png"} {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "images", name))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := imagestore.CheckPNG(pngWithText(b, "check")); err != nil {
			t.Fatalf("%s with a tEXt chunk: %v", name, err)
		}
		l.pngs = append(l.pngs, b)
	}
	for i := range crashWorkers {
		l.workers = append(l.workers, &crashWorker{l: l, id: i, rng: rand.New(rand.NewPCG(rng.Uint64(), uint64(i)))})
	}
	return l
}

// pngWithText returns the PNG base with a tEXt chunk holding text inserted after IHDR
// (the first chunk): a distinct valid PNG per upload. (server's soak test has the
// same helper; test files cannot share code across packages.)
func pngWithText(base []byte, text string) []byte {
	const sigLen, ihdrLen = 8, 8 + 13 + 4
	data := append([]byte("Comment\x00"), text...)
	chunk := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
	chunk = append(chunk, "tEXt"...)
	chunk = append(chunk, data...)
	chunk = binary.BigEndian.AppendUint32(chunk, crc32.ChecksumIEEE(chunk[4:]))
	out := append([]byte{}, base[:sigLen+ihdrLen]...)
	out = append(out, chunk...)
	return append(out, base[sigLen+ihdrLen:]...)
}

// loadResult is what one round's load did.
type loadResult struct {
	acked, inFlight int64
}

func (r loadResult) String() string {
	return fmt.Sprintf("%d writes acknowledged, %d unanswered", r.acked, r.inFlight)
}

// load runs the workers against base until kill is called after killAfter; it
// returns once every worker has stopped.
func (l *crashLedger) load(round int, base string, killAfter time.Duration, kill func()) loadResult {
	l.base = base
	l.client = &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: crashWorkers}}
	defer l.client.CloseIdleConnections()
	l.killed.Store(false)
	l.acked.Store(0)
	l.inFlight.Store(0)
	l.targets = l.targets[:0]
	for _, w := range l.workers {
		for _, u := range w.users {
			l.targets = append(l.targets, u.name)
		}
	}
	var wg sync.WaitGroup
	for _, w := range l.workers {
		w.round, w.logins = round, 0
		wg.Go(w.run)
	}
	time.Sleep(killAfter)
	l.killed.Store(true)
	kill()
	wg.Wait()
	return loadResult{acked: l.acked.Load(), inFlight: l.inFlight.Load()}
}

// send makes one request. ok is false when there was no answer: expected once the
// process is killed, a failure before.
func (l *crashLedger) send(method, path, token string, body []byte) (code int, data []byte, ok bool) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, l.base+path, rd)
	if err != nil {
		l.t.Errorf("%s %s: %v", method, path, err)
		return 0, nil, false
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Token "+token)
	}
	res, err := l.client.Do(req)
	if err == nil {
		data, err = io.ReadAll(res.Body)
		res.Body.Close()
	}
	if err != nil {
		if !l.killed.Load() {
			l.t.Errorf("%s %s: no answer while gardend was running: %v", method, path, err)
		}
		return 0, nil, false
	}
	return res.StatusCode, data, true
}

// write sends one write whose expected status is want and decodes the answer into out.
// It returns false when the worker should stop: no answer (the kill), or a wrong
// status (reported).
func (w *crashWorker) write(want int, method, path, token string, body, out any) bool {
	raw, ok := body.([]byte)
	if !ok {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			w.l.t.Errorf("encode %T: %v", body, err)
			return false
		}
	}
	code, data, answered := w.l.send(method, path, token, raw)
	if !answered {
		w.l.inFlight.Add(1)
		return false
	}
	if code != want {
		w.l.t.Errorf("%s %s: status %d, want %d: %s", method, path, code, want, data)
		return false
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			w.l.t.Errorf("%s %s: decode %s: %v", method, path, data, err)
			return false
		}
	}
	w.l.acked.Add(1)
	return true
}

// run registers this round's user, then writes until the kill. An operation that
// lacks what it needs (a garden to upload to) does the one that creates it instead;
// createCompany and read end every such chain.
func (w *crashWorker) run() {
	if !w.register() {
		return
	}
	for range crashMaxOps {
		w.seq++
		var ok bool
		switch n := w.rng.IntN(100); {
		case n < 6:
			ok = w.createCompany()
		case n < 14:
			ok = w.createGarden()
		case n < 26:
			ok = w.setPerm(false)
		case n < 32:
			ok = w.removePerm(false)
		case n < 42:
			ok = w.setPerm(true)
		case n < 46:
			ok = w.removePerm(true)
		case n < 64:
			ok = w.upload()
		case n < 84:
			ok = w.saveWidgets()
		case n < 86:
			ok = w.login()
		case n < 88:
			ok = w.deleteGarden()
		default:
			ok = w.read()
		}
		if !ok {
			return
		}
	}
}

func (w *crashWorker) tag() string { return fmt.Sprintf("w%d-r%d-%d", w.id, w.round, w.seq) }

// user picks a user known to exist.
func (w *crashWorker) user() *crashUser {
	var us []*crashUser
	for _, u := range w.users {
		if u.exists.acked == "1" {
			us = append(us, u)
		}
	}
	return us[w.rng.IntN(len(us))]
}

func (w *crashWorker) company() *crashCompany {
	var cs []*crashCompany
	for _, c := range w.companies {
		if c.id != 0 {
			cs = append(cs, c)
		}
	}
	if len(cs) == 0 {
		return nil
	}
	return cs[w.rng.IntN(len(cs))]
}

func (w *crashWorker) garden() (*crashCompany, *crashGarden) {
	c := w.company()
	if c == nil {
		return nil, nil
	}
	var gs []*crashGarden
	for _, g := range c.gardens {
		if g.id != 0 && g.exists.acked == "1" {
			gs = append(gs, g)
		}
	}
	if len(gs) == 0 {
		return c, nil
	}
	return c, gs[w.rng.IntN(len(gs))]
}

func (w *crashWorker) register() bool {
	u := &crashUser{name: "user-" + w.tag(), round: w.round}
	u.password = "pw-of-" + u.name
	u.exists.begin("1")
	w.users = append(w.users, u)
	var res struct{ Token string }
	if !w.write(http.StatusCreated, "POST", "/register", "", map[string]string{
		"username": u.name, "password": u.password, "first_name": "Crash", "last_name": "Test",
	}, &res) {
		return false
	}
	u.token = res.Token
	u.exists.ack("1")
	w.l.mu.Lock()
	w.l.targets = append(w.l.targets, u.name)
	w.l.mu.Unlock()
	return true
}

func (w *crashWorker) login() bool {
	if w.logins >= crashMaxLogins {
		return w.read()
	}
	w.logins++
	u := w.user()
	var res struct{ Token string }
	if !w.write(http.StatusOK, "POST", "/login", "", map[string]string{"username": u.name, "password": u.password}, &res) {
		return false
	}
	u.token = res.Token
	return true
}

func (w *crashWorker) createCompany() bool {
	if len(w.companies) >= crashMaxCompanies {
		return w.read()
	}
	c := &crashCompany{name: "company-" + w.tag(), owner: w.user(), perms: map[string]*maybe{}}
	c.exists.begin("1")
	w.companies = append(w.companies, c)
	var res store.Company
	if !w.write(http.StatusCreated, "POST", "/companies", c.owner.token, map[string]string{"name": c.name}, &res) {
		return false
	}
	c.id = res.ID
	c.exists.ack("1")
	return true
}

func (w *crashWorker) createGarden() bool {
	c := w.company()
	if c == nil {
		return w.createCompany()
	}
	if len(c.gardens) >= crashMaxGardens {
		return w.read()
	}
	g := &crashGarden{name: "garden-" + w.tag(), perms: map[string]*maybe{}}
	g.exists.begin("1")
	c.gardens = append(c.gardens, g)
	var res store.Garden
	if !w.write(http.StatusCreated, "POST", companyPath(c.id)+"/gardens", c.owner.token, map[string]string{"name": g.name}, &res) {
		return false
	}
	g.id = res.ID
	g.exists.ack("1")
	return true
}

func (w *crashWorker) deleteGarden() bool {
	c, g := w.garden()
	if g == nil {
		return w.createGarden()
	}
	g.exists.begin("")
	if !w.write(http.StatusOK, "DELETE", gardenPath(c.id, g.id), c.owner.token, nil, nil) {
		return false
	}
	g.exists.ack("")
	return true
}

// permTarget picks a user known to exist other than the owner (a permission on
// oneself is 403).
func (w *crashWorker) permTarget(owner string) string {
	w.l.mu.Lock()
	defer w.l.mu.Unlock()
	for range 8 {
		if u := w.l.targets[w.rng.IntN(len(w.l.targets))]; u != owner {
			return u
		}
	}
	return ""
}

// perms returns the permission values and path of a random company (onGarden false)
// or garden.
func (w *crashWorker) perms(onGarden bool) (map[string]*maybe, string, *crashCompany) {
	c, g := w.garden()
	switch {
	case c == nil:
		return nil, "", nil
	case !onGarden:
		return c.perms, companyPath(c.id), c
	case g == nil:
		return nil, "", nil
	}
	return g.perms, gardenPath(c.id, g.id), c
}

func (w *crashWorker) setPerm(onGarden bool) bool {
	perms, path, c := w.perms(onGarden)
	if perms == nil {
		return w.createGarden()
	}
	who := w.permTarget(c.owner.name)
	if who == "" {
		return w.read()
	}
	level := []string{"u", "a"}[w.rng.IntN(2)]
	if perms[who] == nil {
		perms[who] = &maybe{}
	}
	perms[who].begin(level)
	var res struct {
		Username   string `json:"username"`
		Permission string `json:"permission"`
	}
	if !w.write(http.StatusCreated, "POST", path+"/createPermission", c.owner.token, map[string]string{"username": who, "permission": level}, &res) {
		return false
	}
	if res.Username != who || res.Permission != level {
		w.l.t.Errorf("POST %s/createPermission %s %s answered %+v", path, who, level, res)
	}
	perms[who].ack(level)
	return true
}

func (w *crashWorker) removePerm(onGarden bool) bool {
	perms, path, c := w.perms(onGarden)
	if perms == nil {
		return w.createGarden()
	}
	var granted []string
	for who := range perms {
		granted = append(granted, who)
	}
	if len(granted) == 0 {
		return w.setPerm(onGarden)
	}
	slices.Sort(granted) // map order would defeat GARDEND_CRASH_SEED
	who := granted[w.rng.IntN(len(granted))]
	had := perms[who].acked != ""
	perms[who].begin("")
	var res struct {
		Removed bool `json:"removed"`
	}
	if !w.write(http.StatusOK, "POST", path+"/removePermission", c.owner.token, map[string]string{"username": who}, &res) {
		return false
	}
	if res.Removed != had {
		w.l.t.Errorf("POST %s/removePermission %s answered removed=%v; the permission was %s", path, who, res.Removed, perms[who])
	}
	perms[who].ack("")
	return true
}

func (w *crashWorker) upload() bool {
	c, g := w.garden()
	if g == nil {
		return w.createGarden()
	}
	key := w.tag()
	lat := 52 + float64(w.seq%1000)/1e4
	up := &crashUpload{
		png: pngWithText(w.l.pngs[w.rng.IntN(len(w.l.pngs))], key),
		coords: store.Coordinates{
			{Name: "top_left", Latitude: lat, Longitude: 8},
			{Name: "top_right", Latitude: lat, Longitude: 8.001},
			{Name: "bottom_left", Latitude: lat - 0.001, Longitude: 8},
		},
	}
	w.l.uploads.Store(key, up)
	g.image.begin(key)
	body := map[string]any{"image": imagestore.DataURLPrefix + base64.StdEncoding.EncodeToString(up.png), "coordinates": up.coords}
	if !w.write(http.StatusCreated, "POST", gardenPath(c.id, g.id)+"/image", c.owner.token, body, nil) {
		return false
	}
	g.image.ack(key)
	return true
}

// saveWidgets stores a document of a varying shape and size; the odd spacing must
// survive byte for byte.
func (w *crashWorker) saveWidgets() bool {
	u := w.user()
	var doc string
	switch w.rng.IntN(4) {
	case 0:
		doc = fmt.Sprintf(`{"tag": %q,  "panels":[1, 2 ,3]}`, w.tag())
	case 1:
		doc = fmt.Sprintf(`[ %q, {"x" :1} ]`, w.tag())
	case 2:
		doc = fmt.Sprintf("%q\n", w.tag())
	default:
		// Large enough to span several database pages.
		doc = fmt.Sprintf(`{"tag":%q, "notes":%q}`, w.tag(), strings.Repeat("compost ", 2000+w.rng.IntN(4000)))
	}
	u.widgets.begin(doc)
	var echo json.RawMessage
	if !w.write(http.StatusCreated, "POST", "/user/widgets", u.token, []byte(doc), &echo) {
		return false
	}
	u.widgets.ack(doc)
	return true
}

// read makes the load a little less write-only; a read changes nothing.
func (w *crashWorker) read() bool {
	code, data, ok := w.l.send("GET", "/gardens", w.user().token, nil)
	if ok && code != http.StatusOK {
		w.l.t.Errorf("GET /gardens: %d %s", code, data)
		return false
	}
	return ok
}

func companyPath(c uint64) string { return fmt.Sprintf("/companies/%d", c) }

func gardenPath(c, g uint64) string { return fmt.Sprintf("/companies/%d/gardens/%d", c, g) }

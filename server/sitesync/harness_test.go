package sitesync

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/gardend/gardend/imagestore"
	"github.com/gardend/gardend/server/sitesync/synctest"
	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/bolt"
	"github.com/gardend/gardend/store/postgres"
	"github.com/gardend/gardend/store/postgres/pgtest"
)

// files is image content in a directory, as a field box keeps it.
type files struct{ dir *imagestore.Store }

func (f files) PutImage(_ context.Context, _ uint64, r io.Reader) (string, int64, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return "", 0, err
	}
	p, err := f.dir.Put(data)
	return p, int64(len(data)), err
}
func (f files) OpenImage(_ context.Context, p string) (io.ReadCloser, int64, error) {
	return f.dir.Open(p)
}
func (f files) RemoveImage(_ context.Context, p string) error { return f.dir.Remove(p) }

// photoDir is photo content in a directory, as a field box keeps it.
type photoDir struct{ dir *imagestore.Store }

func (f photoDir) PutPhoto(_ context.Context, _ uint64, ext string, r io.Reader) (string, int64, error) {
	p, err := f.dir.CreateAs(ext)
	if err != nil {
		return "", 0, err
	}
	n, err := io.Copy(p, r)
	if err != nil {
		p.Abort()
		return "", 0, err
	}
	rel, err := p.Commit()
	return rel, n, err
}
func (f photoDir) OpenPhoto(_ context.Context, p string) (io.ReadCloser, int64, error) {
	rc, n, err := f.dir.Open(p)
	if errors.Is(err, imagestore.ErrNotFound) {
		err = fmt.Errorf("%w: %w", store.ErrNotFound, err)
	}
	return rc, n, err
}
func (f photoDir) RemovePhoto(_ context.Context, p string) error { return f.dir.Remove(p) }

func testLogger(t testing.TB, name string) zerolog.Logger {
	if testing.Verbose() {
		return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.DebugLevel).With().Str("node", name).Logger()
	}
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel).With().Str("node", name).Logger()
}

// testOffice is an office node on its own PostgreSQL database.
type testOffice struct {
	st     *postgres.Store
	office *Office
	cancel context.CancelFunc
	done   chan struct{}
}

func openOfficeStore(t testing.TB, dsn string) *postgres.Store { return openOfficeStoreAt(t, dsn, nil) }

// openOfficeStoreAt is openOfficeStore with the clock now.
func openOfficeStoreAt(t testing.TB, dsn string, now func() time.Time) *postgres.Store {
	t.Helper()
	st, err := postgres.Open(context.Background(), dsn, postgres.Options{MaxConns: 8, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// startOffice runs an office node named node on the database dsn.
func startOffice(t testing.TB, hub *synctest.Hub, st *postgres.Store, node string) *testOffice {
	return startOfficeAt(t, hub, st, node, nil)
}

// startOfficeAt is startOffice with the clock now.
func startOfficeAt(t testing.TB, hub *synctest.Hub, st *postgres.Store, node string, now func() time.Time) *testOffice {
	t.Helper()
	return startOfficeWith(t, hub, OfficeConfig{Store: st, Node: node, Now: now})
}

// startOfficeWith runs an office node of cfg, with the hub, a test logger and the
// tests' poll and lease.
func startOfficeWith(t testing.TB, hub *synctest.Hub, cfg OfficeConfig) *testOffice {
	t.Helper()
	st := cfg.Store.(*postgres.Store)
	cfg.HubURL, cfg.Logger = hub.ClientURL(), testLogger(t, cfg.Node)
	cfg.Poll, cfg.Lease = 200*time.Millisecond, 3*time.Second
	o, err := StartOffice(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	to := &testOffice{st: st, office: o, cancel: cancel, done: make(chan struct{})}
	go func() { defer close(to.done); _ = o.Run(ctx) }()
	t.Cleanup(to.stop)
	return to
}

func (o *testOffice) stop() {
	if o.cancel != nil {
		o.cancel()
		<-o.done
		o.office.Close()
		o.cancel = nil
	}
}

// testBox is a field box: a bbolt store, image files and its sync.
type testBox struct {
	dir    string
	st     *bolt.Store
	images files
	photos photoDir
	creds  []byte
	uplink string
	box    *Box
	cancel context.CancelFunc
	done   chan struct{}
	site   store.Site
	// maxBytes is the box's --sync-max-bytes (0: the default); now its clock (nil:
	// time.Now); logs what it logged at warning level and above.
	maxBytes int64
	// poll is how often the box looks for changes (0: 50 ms).
	poll time.Duration
	now  func() time.Time
	logs syncBuffer
}

// newBoxStore makes a box's store and image files before it joins.
func newBoxStore(t testing.TB) *testBox { return newBoxStoreAt(t, nil) }

// newBoxStoreAt is newBoxStore with the clock now.
func newBoxStoreAt(t testing.TB, now func() time.Time) *testBox {
	t.Helper()
	dir := t.TempDir()
	// NoSync: these tests kill nothing; they need many writes quickly.
	st, err := bolt.Open(filepath.Join(dir, bolt.FileName), bolt.Options{Now: now, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	imgs, err := imagestore.Open(filepath.Join(dir, "images"))
	if err != nil {
		t.Fatal(err)
	}
	photos, err := imagestore.OpenFor(filepath.Join(dir, store.PhotoDir), ".jpg", ".png")
	if err != nil {
		t.Fatal(err)
	}
	return &testBox{dir: dir, st: st, images: files{imgs}, photos: photoDir{photos}, now: now}
}

// join registers the box as a site at the office and starts its sync.
func (b *testBox) join(t testing.TB, office *postgres.Store, name, uplink string) {
	t.Helper()
	site, creds, err := AddSite(office, name)
	if err != nil {
		t.Fatal(err)
	}
	b.site, b.creds, b.uplink = site, creds, uplink
	b.start(t)
}

func (b *testBox) start(t testing.TB) {
	t.Helper()
	credsFile := filepath.Join(b.dir, "site.creds")
	if err := os.WriteFile(credsFile, b.creds, 0o600); err != nil {
		t.Fatal(err)
	}
	log := testLogger(t, b.site.Name)
	log = log.Output(zerolog.MultiLevelWriter(zerolog.NewTestWriter(t), &b.logs))
	box, err := StartBox(context.Background(), BoxConfig{Store: b.st, Images: b.images, Photos: b.photos, DataDir: b.dir, Uplink: b.uplink,
		CredsFile: credsFile, Logger: log, Poll: cmp.Or(b.poll, 50*time.Millisecond), MaxBytes: b.maxBytes, Now: b.now}, b.creds)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.box, b.cancel, b.done = box, cancel, make(chan struct{})
	go func() { defer close(b.done); _ = box.Run(ctx) }()
	t.Cleanup(b.stop)
}

func (b *testBox) stop() {
	if b.cancel != nil {
		b.cancel()
		<-b.done
		b.box.Close()
		b.cancel = nil
	}
}

// gid is a box record's id at the office.
func (b *testBox) gid(id uint64) uint64 { return store.GlobalID(b.site.Number, id) }

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

func readAll(t testing.TB, rc io.ReadCloser, _ int64, err error) []byte {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

var corners = store.Coordinates{
	{Name: "top_left", Latitude: 52.5, Longitude: 13.4},
	{Name: "top_right", Latitude: 52.5, Longitude: 13.5},
	{Name: "bottom_left", Latitude: 52.4, Longitude: 13.4},
}

func must[T any](t testing.TB) func(v T, err error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

var _ = bytes.Equal
var _ = pgtest.NewDatabase

func writeFile(path string, data []byte) error { return os.WriteFile(path, data, 0o600) }

// impostor is a box of an attacker's making that holds a site's credentials: a NATS
// server of its own joined to the hub, and a connection to it.
func impostor(t *testing.T, hub *synctest.Hub, creds []byte) (*natsserver.Server, *nats.Conn, jetstream.JetStream) {
	t.Helper()
	dir := t.TempDir()
	credsFile := filepath.Join(dir, "site.creds")
	if err := writeFile(credsFile, creds); err != nil {
		t.Fatal(err)
	}
	id, err := ParseSiteCreds(creds)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := StartBoxServer(BoxServerOptions{Site: id, StoreDir: filepath.Join(dir, "nats"), Uplink: hub.LeafURL(), CredsFile: credsFile, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := ConnectInProcess(srv, "impostor")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return srv, nc, js
}

package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/postgres"
	"github.com/gardend/gardend/store/postgres/pgtest"
)

func TestMigrationsConcurrentOpens(t *testing.T) {
	dsn := pgtest.NewEmptyDatabase(t)
	const nodes = 4
	var wg sync.WaitGroup
	errs := make([]error, nodes)
	stores := make([]*postgres.Store, nodes)
	start := make(chan struct{})
	for i := range nodes {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = postgres.Open(context.Background(), dsn, postgres.Options{MaxConns: 2})
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
		defer stores[i].Close()
	}
	conn := adminConn(t, dsn)
	var rows, version int
	if err := conn.QueryRow(context.Background(), `SELECT count(*), max(version) FROM schema_migrations`).Scan(&rows, &version); err != nil {
		t.Fatal(err)
	}
	if rows != int(postgres.SchemaVersion()) || version != int(postgres.SchemaVersion()) {
		t.Fatalf("schema_migrations has %d rows up to %d, want %d", rows, version, postgres.SchemaVersion())
	}
	if err := stores[0].Check(); err != nil {
		t.Fatal(err)
	}
	if st, _ := stores[1].Stats(); st.SchemaVersion != postgres.SchemaVersion() {
		t.Fatalf("stats schema %d", st.SchemaVersion)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	dsn := pgtest.NewEmptyDatabase(t)
	st, err := postgres.Open(context.Background(), dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	conn := adminConn(t, dsn)
	if _, err := conn.Exec(context.Background(), `INSERT INTO schema_migrations (version, name) VALUES (999, 'future')`); err != nil {
		t.Fatal(err)
	}
	_, err = postgres.Open(context.Background(), dsn, postgres.Options{})
	if err == nil || !strings.Contains(err.Error(), "newer than this gardend") {
		t.Fatalf("open of a newer schema: %v", err)
	}
}

func TestBadDSN(t *testing.T) {
	_, err := postgres.Open(context.Background(), "postgres://x:y@[::1", postgres.Options{})
	if !errors.Is(err, store.ErrInvalid) || strings.Contains(err.Error(), ":y@") {
		t.Fatalf("bad DSN: %v", err)
	}
}

func adminConn(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// TestCheckIndexesFindsDamage breaks one rule at a time behind the store's back and
// expects CheckIndexes to name it, so that a clean result at cleanup means something.
func TestCheckIndexesFindsDamage(t *testing.T) {
	tests := []struct{ want, damage string }{
		{"has no admin", `UPDATE company_permissions SET level = 'u'`},
		{"image path and coordinates disagree", `DELETE FROM garden_coordinates`},
		{"coordinate seq", `UPDATE garden_coordinates SET seq = seq + 10`},
		{"no bed refers to it", `INSERT INTO projects (uuid) VALUES ('stray')`},
		{"was never finished", `INSERT INTO images (path, garden_id, created) SELECT 'images/x0.png', id, now() FROM gardens`},
		{"bytes stored", `INSERT INTO images (path, garden_id, size, created) SELECT 'images/y.png', id, 10, now() FROM gardens`},
		{"identity sequence behind", `INSERT INTO users (id, username, first_name, last_name, email, password_hash, date_joined, username_look, username_look_lower)
			VALUES (1000, 'z', 'z', 'z', '', 'h', now(), 'z', 'z')`},
		{"garden 1: company 99 does not exist", `SET session_replication_role = replica; UPDATE gardens SET company_id = 99`},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			dsn := pgtest.NewDatabase(t)
			st, err := postgres.Open(context.Background(), dsn, postgres.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			u, _ := st.CreateUser(store.NewUser{Username: "alice", FirstName: "A", LastName: "L", PasswordHash: "x"})
			c, _ := st.CreateCompany(u.ID, "c")
			g, _ := st.CreateGarden(c.ID, "g")
			st.SetGardenPermission(g.ID, 0, "alice", store.LevelUser)
			if _, err := st.SetGardenImage(g.ID, "images/x0.png", corners); err != nil {
				t.Fatal(err)
			}
			if _, err := st.CreateBed(g.ID, "p1", ""); err != nil {
				t.Fatal(err)
			}
			if err := st.CheckIndexes(); err != nil {
				t.Fatalf("clean fixture: %v", err)
			}
			conn := adminConn(t, dsn)
			if _, err := conn.Exec(context.Background(), tc.damage); err != nil {
				t.Fatal(err)
			}
			if err := st.CheckIndexes(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("CheckIndexes = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestImageRemovedWhileRead(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	st, err := postgres.Open(context.Background(), dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	u, _ := st.CreateUser(store.NewUser{Username: "alice", FirstName: "A", LastName: "L", PasswordHash: "x"})
	c, _ := st.CreateCompany(u.ID, "c")
	g, _ := st.CreateGarden(c.ID, "g")
	data := bytes.Repeat([]byte("0123456789abcdef"), 3*postgres.ImageChunkSize/16)
	path, _, err := st.PutImage(ctx, g.ID, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	rc, _, err := st.OpenImage(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	head := make([]byte, postgres.ImageChunkSize+1)
	if _, err := io.ReadFull(rc, head); err != nil {
		t.Fatal(err)
	}
	if err := st.RemoveImage(ctx, path); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(rc); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("reading on after the image went: %v", err)
	}
}

func TestSweepUnreferencedImages(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	st, err := postgres.Open(context.Background(), dsn, postgres.Options{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	u, _ := st.CreateUser(store.NewUser{Username: "alice", FirstName: "A", LastName: "L", PasswordHash: "x"})
	c, _ := st.CreateCompany(u.ID, "c")
	g, _ := st.CreateGarden(c.ID, "g")
	shown, _, _ := st.PutImage(ctx, g.ID, strings.NewReader("shown"))
	if _, err := st.SetGardenImage(g.ID, shown, corners); err != nil {
		t.Fatal(err)
	}
	orphan, _, _ := st.PutImage(ctx, g.ID, strings.NewReader("orphan"))
	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	young, _, _ := st.PutImage(ctx, g.ID, strings.NewReader("young, maybe in flight"))
	n, err := st.SweepUnreferencedImages(ctx, time.Hour)
	if err != nil || n != 1 {
		t.Fatalf("swept %d, %v; want 1", n, err)
	}
	for path, want := range map[string]bool{shown: true, orphan: false, young: true} {
		_, _, err := st.OpenImage(ctx, path)
		if (err == nil) != want {
			t.Errorf("%s present=%v, want %v", path, err == nil, want)
		}
	}
}

// proxy forwards loopback connections to the database and can cut them all, refuse
// new ones, or accept them and never answer (a network partition).
type proxy struct {
	t      *testing.T
	ln     net.Listener
	target string

	mu     sync.Mutex
	mode   string // "pass", "refuse", "blackhole"
	conns  []net.Conn
	closed bool
}

func newProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, ln: ln, target: target, mode: "pass"}
	go p.serve()
	t.Cleanup(func() {
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
		ln.Close()
		p.cut()
	})
	return p
}

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		mode := p.mode
		p.conns = append(p.conns, c)
		p.mu.Unlock()
		switch mode {
		case "refuse":
			c.Close()
		case "blackhole":
			// Hold it open and say nothing.
		default:
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, up)
			p.mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}
}

func (p *proxy) set(mode string) {
	p.mu.Lock()
	p.mode = mode
	p.mu.Unlock()
	p.cut()
}

// cut closes every connection made so far.
func (p *proxy) cut() {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// TestOutageIsUnavailableAndRecovers: while the database cannot be reached (refused,
// or a partition that swallows packets) every operation fails with ErrUnavailable
// within the operation deadline, never hangs, never reads as "unauthenticated"; when
// it is back the same store works again by itself.
func TestOutageIsUnavailableAndRecovers(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := newProxy(t, u.Host)
	u.Host = p.ln.Addr().String()
	// Long enough that twice it leaves a loaded machine 1.5 s of slack past one
	// deadline, while an operation that waited twice would still show.
	const deadline = 1500 * time.Millisecond
	st, err := postgres.Open(context.Background(), u.String(), postgres.Options{OpTimeout: deadline, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ann, err := st.CreateUser(store.NewUser{Username: "ann", FirstName: "A", LastName: "L", PasswordHash: "x"})
	if err != nil {
		t.Fatal(err)
	}
	digest := store.TokenDigest(fmt.Sprintf("%064x", "ann"))
	if err := st.CreateToken(ann.ID, digest, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	ops := map[string]func() error{
		"authenticate": func() error { _, err := st.Authenticate(digest); return err },
		"read":         func() error { _, err := st.GardensVisibleTo(ann.ID); return err },
		"write":        func() error { _, err := st.CreateCompany(ann.ID, "c"); return err },
	}
	for _, mode := range []string{"refuse", "blackhole"} {
		p.set(mode)
		for name, op := range ops {
			began := time.Now()
			err := op()
			took := time.Since(began)
			if !errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrUnauthenticated) {
				t.Errorf("%s, %s: %v, want ErrUnavailable", mode, name, err)
			}
			if took > 2*deadline {
				t.Errorf("%s, %s took %v with a deadline of %v", mode, name, took, deadline)
			}
		}
		p.set("pass")
		for name, op := range ops {
			if err := op(); err != nil {
				t.Errorf("after %s, %s: %v", mode, name, err)
			}
		}
	}
}

// TestTerminatedConnections: the database ends every session (a restart, a failover,
// an operator); the pool's next operations reconnect instead of failing.
func TestTerminatedConnections(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	st, err := postgres.Open(context.Background(), dsn, postgres.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i := range 4 {
		if _, err := st.CreateUser(store.NewUser{Username: fmt.Sprintf("u%d", i), FirstName: "A", LastName: "L", PasswordHash: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	conn := adminConn(t, dsn)
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n); err != nil || n == 0 {
		t.Fatalf("terminated %d sessions: %v", n, err)
	}
	for i := range 4 {
		if _, err := st.UserByUsername(fmt.Sprintf("u%d", i)); err != nil {
			t.Errorf("read %d after the sessions ended: %v", i, err)
		}
	}
}

var corners = store.Coordinates{
	{Name: "top_left", Latitude: 1, Longitude: 1},
	{Name: "top_right", Latitude: 1, Longitude: 2},
	{Name: "bottom_left", Latitude: 0, Longitude: 1},
}

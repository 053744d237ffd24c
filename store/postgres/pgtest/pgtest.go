// Package pgtest gives tests a real PostgreSQL: one server per test binary, started
// from the installed binaries (Debian's postgresql package) with initdb in a
// temporary directory on a free loopback port, and a fresh database per test.
//
// Use it from TestMain so that the server stops when the tests end (and, optionally,
// to prepare a template database every test database is copied from):
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// and ask for a database in each test with NewDatabase(t). The server starts with the
// first database asked for. Running as root, the server runs as the "postgres" user
// (PostgreSQL refuses to run as root).
//
// Where PostgreSQL is not installed a test is skipped with a message saying what to
// install — unless GARDEND_CI is set, as .ci/run does, where it fails. Set
// GARDEND_PG_DSN to the DSN of an existing server (a role that may create databases)
// to use it instead of starting one; GARDEND_PG_BIN to the directory of initdb and
// postgres when they are not found on PATH or under /usr/lib/postgresql.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Main runs the tests and then stops the server, if one was started, and exits.
// With a prepare function, NewDatabase hands out copies of a template database that
// prepare was run on once (a schema migrated, say), which is cheaper than preparing
// each test's database; prepare must close its connections before it returns.
func Main(m *testing.M, prepare ...func(dsn string) error) {
	os.Exit(Run(m, prepare...))
}

// Run is Main for a TestMain that does more after the tests: it runs them, stops the
// server and returns the exit code.
func Run(m *testing.M, prepare ...func(dsn string) error) int {
	if len(prepare) > 0 {
		shared.prepare = prepare[0]
	}
	code := m.Run()
	shared.stop()
	return code
}

// errMissing is the reason for a skip: PostgreSQL is not installed here.
var errMissing = errors.New("PostgreSQL is not installed")

// server is the binary's PostgreSQL.
type server struct {
	once    sync.Once
	err     error
	dsn     url.URL // the admin connection, database "postgres"
	dir     string
	cmd     *exec.Cmd
	exited  chan struct{}
	started time.Duration

	mu    sync.Mutex
	admin *pgx.Conn
	n     atomic.Int64

	// own: always start a server, even with GARDEND_PG_DSN (StartServer's, which
	// the test stops and starts).
	own bool
	// What a restart needs: the binaries, the port, the user it runs as.
	bin  string
	port int
	cred *syscall.Credential

	prepare      func(dsn string) error
	templateOnce sync.Once
	template     string // the prepared template database, "" for none
	templateErr  error
}

var shared server

// StartupTime is how long starting the server took (initdb included); zero when none
// was started.
func StartupTime() time.Duration { return shared.started }

// NewDatabase creates a database for the test, dropped at cleanup, and returns its
// DSN: a copy of the prepared template when Main was given a prepare function, else
// an empty one.
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	shared.ready(tb)
	shared.templateOnce.Do(shared.makeTemplate)
	if shared.templateErr != nil {
		tb.Fatalf("prepare the template database: %v", shared.templateErr)
	}
	return shared.create(tb, shared.template)
}

// NewEmptyDatabase creates an empty database for the test (no template), dropped at
// cleanup, and returns its DSN.
func NewEmptyDatabase(tb testing.TB) string {
	tb.Helper()
	shared.ready(tb)
	return shared.create(tb, "")
}

// ready starts the server once, and skips or fails the test without one.
func (s *server) ready(tb testing.TB) {
	tb.Helper()
	s.once.Do(s.start)
	if errors.Is(s.err, errMissing) && os.Getenv("GARDEND_CI") == "" {
		tb.Skipf("%v (set GARDEND_CI to make this a failure)", s.err)
	}
	if s.err != nil {
		tb.Fatalf("PostgreSQL for tests: %v", s.err)
	}
}

func (s *server) create(tb testing.TB, template string) string {
	tb.Helper()
	name := fmt.Sprintf("gardend_test_%d_%d", os.Getpid(), s.n.Add(1))
	sql := `CREATE DATABASE ` + pgx.Identifier{name}.Sanitize()
	if template != "" {
		sql += ` TEMPLATE ` + pgx.Identifier{template}.Sanitize()
	}
	if err := s.exec(sql); err != nil {
		tb.Fatalf("create test database: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.exec(`DROP DATABASE ` + pgx.Identifier{name}.Sanitize() + ` WITH (FORCE)`); err != nil {
			tb.Errorf("drop test database: %v", err)
		}
	})
	return s.dsnOf(name)
}

func (s *server) dsnOf(database string) string {
	dsn := s.dsn
	dsn.Path = "/" + database
	return dsn.String()
}

// makeTemplate creates and prepares the template database, once.
func (s *server) makeTemplate() {
	if s.prepare == nil {
		return
	}
	name := fmt.Sprintf("gardend_template_%d", os.Getpid())
	if s.templateErr = s.exec(`CREATE DATABASE ` + pgx.Identifier{name}.Sanitize()); s.templateErr != nil {
		return
	}
	if s.templateErr = s.prepare(s.dsnOf(name)); s.templateErr == nil {
		s.template = name
	}
}

// exec runs one statement on the admin connection.
func (s *server) exec(sql string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := s.admin.Exec(ctx, sql)
	return err
}

func (s *server) start() {
	begin := time.Now()
	if dsn := os.Getenv("GARDEND_PG_DSN"); dsn != "" && !s.own {
		u, err := url.Parse(dsn)
		if err != nil {
			s.err = fmt.Errorf("GARDEND_PG_DSN: %w", err)
			return
		}
		s.dsn = *u
		s.err = s.connect(10 * time.Second)
		return
	}
	bin, err := findBinaries()
	if err != nil {
		s.err = err
		return
	}
	// A port picked free may be taken before the server binds it: try again.
	for range 3 {
		if s.err = s.startServer(bin); s.err == nil {
			s.started = time.Since(begin)
			return
		}
		s.stop()
	}
}

// findBinaries returns the directory holding initdb and postgres.
func findBinaries() (string, error) {
	if dir := os.Getenv("GARDEND_PG_BIN"); dir != "" {
		return dir, nil
	}
	// Debian keeps them out of PATH, one directory per major version: take the
	// newest.
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return majorOf(b) - majorOf(a) })
	for _, dir := range dirs {
		if isExecutable(filepath.Join(dir, "initdb")) && isExecutable(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	if initdb, err := exec.LookPath("initdb"); err == nil {
		dir := filepath.Dir(initdb)
		if isExecutable(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	return "", fmt.Errorf("%w: no initdb and postgres under /usr/lib/postgresql/*/bin or on PATH (apt-get install postgresql)", errMissing)
}

func majorOf(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

func (s *server) startServer(bin string) error {
	cred, err := serverUser()
	if err != nil {
		return err
	}
	s.dir, err = os.MkdirTemp("", "gardend-pg-")
	if err != nil {
		return err
	}
	if cred != nil {
		if err := os.Chown(s.dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return fmt.Errorf("hand %s to the postgres user: %w", s.dir, err)
		}
	}
	data := filepath.Join(s.dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust",
		"--encoding=UTF8", "--locale=C", "--no-sync", "--no-instructions")
	initdb.SysProcAttr = procAttr(cred)
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %v\n%s", err, out)
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	s.bin, s.port, s.cred = bin, port, cred
	return s.launch()
}

// launch runs postgres on the cluster made by startServer and connects to it.
func (s *server) launch() error {
	bin, port, cred := s.bin, s.port, s.cred
	data := filepath.Join(s.dir, "data")
	logFile, err := os.OpenFile(filepath.Join(s.dir, "postgres.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer func() { _ = logFile.Close() }() // postgres has its own descriptor; this is the parent's copy
	// Durability is worth nothing in a throwaway cluster: without fsync a test's
	// CREATE DATABASE and commits cost a fraction.
	s.cmd = exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=300", "-c", "shared_buffers=64MB", "-c", "log_min_messages=warning")
	s.cmd.SysProcAttr = procAttr(cred)
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	// The kernel sends the parent-death signal (procAttr) when the thread that started
	// the child ends, not the process: Go ends threads (one a goroutine locked and
	// left, say the hashing's), so postgres is started from a thread of its own that
	// lives until postgres has exited.
	exited, started := make(chan struct{}), make(chan error, 1)
	cmd := s.cmd
	go func() {
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			close(exited)
			return
		}
		started <- nil
		_ = cmd.Wait() // how it ended is in postgres.log; the exit is what matters
		close(exited)
	}()
	s.exited = exited
	if err := <-started; err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	s.dsn = url.URL{Scheme: "postgres", User: url.User("postgres"), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Path: "/postgres", RawQuery: "sslmode=disable"}
	if err := s.connect(30 * time.Second); err != nil {
		logged, _ := os.ReadFile(filepath.Join(s.dir, "postgres.log"))
		return fmt.Errorf("%v\npostgres log:\n%s", err, logged)
	}
	return nil
}

// connect waits until the server accepts the admin connection.
func (s *server) connect(within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgx.Connect(ctx, s.dsn.String())
		cancel()
		if err == nil {
			s.admin = conn
			return nil
		}
		if s.exited != nil {
			select {
			case <-s.exited:
				return fmt.Errorf("postgres exited during start-up: %v", err)
			default:
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres did not accept connections within %s: %w", within, err)
		}
		time.Sleep(20 * time.Millisecond) // polling a starting server; nothing to wait on
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }() // only its port was wanted
	return l.Addr().(*net.TCPAddr).Port, nil
}

// stop shuts the server down (fast shutdown: open sessions are ended) and removes its
// directory.
func (s *server) stop() {
	s.halt()
	if s.dir != "" && strings.Contains(s.dir, "gardend-pg-") {
		_ = os.RemoveAll(s.dir) // a leftover is in the temporary directory
		s.dir = ""
	}
}

// halt closes the admin connection and shuts postgres down (fast shutdown: open
// sessions are ended at once), keeping its data.
func (s *server) halt() {
	if s.admin != nil {
		_ = s.admin.Close(context.Background()) // the server is shut down next
		s.admin = nil
	}
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGINT) // fails only when it has exited: s.exited is closed
	select {
	case <-s.exited:
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill() // as above
		<-s.exited
	}
	s.cmd = nil
}

// Server is a PostgreSQL of a test's own, for a test that stops and starts it (a
// restart under load) without disturbing the other tests of the binary, which share
// one server.
type Server struct{ s *server }

// StartServer starts a server for the test, stopped and removed at cleanup. Like
// NewDatabase, it skips the test where PostgreSQL is not installed, unless GARDEND_CI
// is set.
func StartServer(tb testing.TB) *Server {
	tb.Helper()
	s := &server{own: true}
	s.ready(tb)
	tb.Cleanup(s.stop)
	return &Server{s: s}
}

// NewDatabase creates an empty database; it goes with the server at cleanup.
func (x *Server) NewDatabase(tb testing.TB) string {
	tb.Helper()
	name := fmt.Sprintf("gardend_test_%d_%d", os.Getpid(), x.s.n.Add(1))
	if err := x.s.exec(`CREATE DATABASE ` + pgx.Identifier{name}.Sanitize()); err != nil {
		tb.Fatalf("create test database: %v", err)
	}
	return x.s.dsnOf(name)
}

// Stop shuts the server down (fast shutdown: open sessions are ended at once), keeping
// its data; clients see their connections refused until Start.
func (x *Server) Stop(tb testing.TB) {
	tb.Helper()
	x.s.mu.Lock()
	defer x.s.mu.Unlock()
	x.s.halt()
}

// Start starts a stopped server again, on the same port and data.
func (x *Server) Start(tb testing.TB) {
	tb.Helper()
	s := x.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return
	}
	if err := s.launch(); err != nil {
		tb.Fatalf("start PostgreSQL again: %v", err)
	}
}

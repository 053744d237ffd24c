package sitesync

import (
	"crypto/rand"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
)

// memSecrets is a secret store in memory: the same bytes for a name every time.
type memSecrets struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (s *memSecrets) Secret(name string, size int) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string][]byte{}
	}
	if b, ok := s.m[name]; ok {
		return b, nil
	}
	b := make([]byte, size)
	_, _ = rand.Read(b)
	s.m[name] = b
	return b, nil
}

func testKeys(t testing.TB) *Keys {
	t.Helper()
	k, err := LoadKeys((&memSecrets{}).Secret)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// testHub is a hub started in-process from the configuration HubConfig prints.
type testHub struct {
	srv        *server.Server
	clientPort int
	leafPort   int
	dir        string
	conf       string
}

func (h *testHub) clientURL() string { return "nats://127.0.0.1:" + strconv.Itoa(h.clientPort) }
func (h *testHub) leafURL() string   { return "nats-leaf://127.0.0.1:" + strconv.Itoa(h.leafPort) }

// startHub writes the hub's configuration for k into dir and runs it in-process.
func startHub(t testing.TB, k *Keys, dir string, revoked Revoked) *testHub {
	t.Helper()
	h := &testHub{clientPort: freePort(t), leafPort: freePort(t), dir: dir}
	conf, err := HubConfig(k, HubOptions{
		ClientListen: "127.0.0.1:" + strconv.Itoa(h.clientPort), LeafListen: "127.0.0.1:" + strconv.Itoa(h.leafPort),
		StoreDir: filepath.Join(dir, "jetstream"), ResolverDir: filepath.Join(dir, "jwt"),
	}, revoked)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	h.conf = filepath.Join(dir, "hub.conf")
	if err := os.WriteFile(h.conf, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	h.start(t)
	return h
}

func (h *testHub) start(t testing.TB) {
	t.Helper()
	opts, err := server.ProcessConfigFile(h.conf)
	if err != nil {
		t.Fatal(err)
	}
	opts.NoSigs = true
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	if testing.Verbose() {
		srv.SetLoggerV2(natsLogger{zerolog.New(zerolog.NewTestWriter(t)).With().Str("nats", "hub").Logger()}, false, false, false)
	}
	srv.Start()
	if !srv.ReadyForConnections(20 * time.Second) {
		t.Fatal("hub did not start")
	}
	h.srv = srv
	t.Cleanup(h.stop)
}

func (h *testHub) stop() {
	if h.srv != nil {
		h.srv.Shutdown()
		h.srv.WaitForShutdown()
		h.srv = nil
	}
}

// officeConn connects to the hub as an office node.
func officeConn(t testing.TB, k *Keys, url string) *nats.Conn {
	t.Helper()
	j, seed, err := k.OfficeCreds()
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(url, nats.UserJWTAndSeed(j, string(seed)), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// waitFor polls cond until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

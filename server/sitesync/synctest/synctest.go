// Package synctest runs the parts of the sync between sites for tests: a hub (in
// this process, or the stock nats-server binary built from the module's own
// nats-server version) and a TCP proxy that cuts, delays and throttles a link.
package synctest

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// FreePort returns a loopback port that was free a moment ago.
func FreePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// HubConfig makes a hub's configuration for the given listeners and directories
// (sitesync.HubConfig with the office's keys).
type HubConfig func(clientListen, leafListen, storeDir, resolverDir string) (string, error)

// Hub is a hub with its ports and directory, which survive a restart.
type Hub struct {
	ClientPort, LeafPort int
	Dir                  string
	Conf                 string

	srv  *server.Server
	proc *Process
}

// ClientURL is the address office nodes connect to, LeafURL the boxes'.
func (h *Hub) ClientURL() string { return "nats://127.0.0.1:" + strconv.Itoa(h.ClientPort) }
func (h *Hub) LeafURL() string   { return "nats-leaf://127.0.0.1:" + strconv.Itoa(h.LeafPort) }

// writeConf writes the hub's configuration into dir.
func writeConf(tb testing.TB, dir string, conf HubConfig) *Hub {
	tb.Helper()
	h := &Hub{ClientPort: FreePort(tb), LeafPort: FreePort(tb), Dir: dir}
	text, err := conf("127.0.0.1:"+strconv.Itoa(h.ClientPort), "127.0.0.1:"+strconv.Itoa(h.LeafPort),
		filepath.Join(dir, "jetstream"), filepath.Join(dir, "jwt"))
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	h.Conf = filepath.Join(dir, "hub.conf")
	if err := os.WriteFile(h.Conf, []byte(text), 0o600); err != nil {
		tb.Fatal(err)
	}
	return h
}

// StartHub runs the hub in this process from the configuration conf makes.
func StartHub(tb testing.TB, dir string, conf HubConfig) *Hub {
	tb.Helper()
	h := writeConf(tb, dir, conf)
	h.Start(tb)
	tb.Cleanup(h.Stop)
	return h
}

// Start (re)starts an in-process hub.
func (h *Hub) Start(tb testing.TB) {
	tb.Helper()
	opts, err := server.ProcessConfigFile(h.Conf)
	if err != nil {
		tb.Fatal(err)
	}
	opts.NoSigs, opts.NoLog = true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		tb.Fatal(err)
	}
	srv.Start()
	if !srv.ReadyForConnections(20 * time.Second) {
		tb.Fatal("the hub did not start within 20s")
	}
	h.srv = srv
}

// Stop shuts an in-process hub down (its files stay).
func (h *Hub) Stop() {
	if h.srv != nil {
		h.srv.Shutdown()
		h.srv.WaitForShutdown()
		h.srv = nil
	}
}

// Server is the in-process hub's server.
func (h *Hub) Server() *server.Server { return h.srv }

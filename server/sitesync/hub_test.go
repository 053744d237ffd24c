package sitesync

import (
	"crypto/rand"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gardend/gardend/server/sitesync/synctest"
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

// hubConf is the configuration sync hub-config prints for k, on test listeners.
func hubConf(k *Keys, revoked Revoked) synctest.HubConfig {
	return func(client, leaf, storeDir, resolverDir string) (string, error) {
		return HubConfig(k, HubOptions{ClientListen: client, LeafListen: leaf, StoreDir: storeDir, ResolverDir: resolverDir}, revoked)
	}
}

// startHub runs the hub for k in this process.
func startHub(t testing.TB, k *Keys, dir string, revoked Revoked) *synctest.Hub {
	t.Helper()
	return synctest.StartHub(t, dir, hubConf(k, revoked))
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

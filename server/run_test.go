package server_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/bolt"
)

// runServer starts the whole server on 127.0.0.1:0 and stops it at cleanup.
func runServer(t testing.TB, cfg server.Config) (*server.Server, string, context.CancelFunc) {
	t.Helper()
	return runServerOn(t, boltBackend, cfg)
}

// runServerOn is runServer on the backend b.
func runServerOn(t testing.TB, b backend, cfg server.Config) (*server.Server, string, context.CancelFunc) {
	t.Helper()
	cfg.Addr = "127.0.0.1:0"
	if cfg.Argon2 == (store.Argon2Params{}) {
		cfg.Argon2 = cheapArgon2
	}
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	srv, err := newServerOn(t, b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	select {
	case <-srv.Ready():
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run returned %v", err)
		}
		srv.Close()
	})
	return srv, "http://" + srv.Addr(), cancel
}

func TestRunServesAndShutsDownGracefully(t *testing.T) {
	dir := t.TempDir()
	srv, base, cancel := runServer(t, server.Config{DataDir: dir, ShutdownTimeout: 5 * time.Second})
	res, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || string(body) != `{"status":"ok"}` {
		t.Fatalf("healthz %d %s", res.StatusCode, body)
	}

	// A second server cannot open the same data directory's database: it fails fast
	// with a clear message.
	start := time.Now()
	_, err = bolt.Open(filepath.Join(dir, bolt.FileName), bolt.Options{})
	if !errors.Is(err, store.ErrLocked) || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second server: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("second server took %v to fail", d)
	}

	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := http.Get(base + "/healthz"); err != nil {
			return // stopped accepting
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("server at %s still accepts after shutdown", srv.Addr())
}

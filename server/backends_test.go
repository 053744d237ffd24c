package server_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/bolt"
	"github.com/gardend/gardend/store/postgres"
	"github.com/gardend/gardend/store/postgres/pgtest"
)

// The server runs on whichever store.Backend it is given (cli opens it). Tests run it
// on the bbolt file of their data directory, as gardend serve does by default, and
// the tests that say so on PostgreSQL too (a fresh database of the test binary's
// pgtest server).

// backend says which store a test server runs on.
type backend struct {
	name string
	// dsn is the PostgreSQL database ("" for bbolt in the data directory).
	dsn string
}

var boltBackend = backend{name: "bbolt"}

// postgresBackend is a fresh PostgreSQL database, dropped at cleanup.
func postgresBackend(tb testing.TB) backend {
	tb.Helper()
	return backend{name: "postgres", dsn: pgtest.NewDatabase(tb)}
}

// bothBackends runs fn against bbolt and PostgreSQL, as subtests.
func bothBackends(t *testing.T, fn func(t *testing.T, b backend)) {
	t.Run("bbolt", func(t *testing.T) { fn(t, boltBackend) })
	t.Run("postgres", func(t *testing.T) { fn(t, postgresBackend(t)) })
}

// open opens the backend for a server on dataDir with the clock now (nil: time.Now).
func (b backend) open(tb testing.TB, dataDir string, now func() time.Time) (store.Backend, bool) {
	tb.Helper()
	if b.dsn != "" {
		st, err := postgres.Open(context.Background(), b.dsn, postgres.Options{Now: now})
		if err != nil {
			tb.Fatal(err)
		}
		return st, st.Created()
	}
	path := filepath.Join(dataDir, bolt.FileName)
	_, statErr := os.Stat(path)
	created := statErr != nil
	st, err := bolt.Open(path, bolt.Options{Now: now})
	if err != nil {
		tb.Fatal(err)
	}
	return st, created
}

// newServer is server.New on cfg with, unless cfg has one, the bbolt file of its data
// directory opened as gardend serve opens it.
func newServer(tb testing.TB, cfg server.Config) (*server.Server, error) {
	tb.Helper()
	return newServerOn(tb, boltBackend, cfg)
}

// newServerOn is newServer on the backend b.
func newServerOn(tb testing.TB, b backend, cfg server.Config) (*server.Server, error) {
	tb.Helper()
	if cfg.Store == nil && cfg.DataDir != "" {
		cfg.Store, cfg.StoreCreated = b.open(tb, cfg.DataDir, cfg.Now)
	}
	return server.New(cfg)
}

package server

import (
	"path/filepath"
	"testing"

	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/bolt"
)

// openTestBolt opens the bbolt file of dir, as gardend serve does by default.
func openTestBolt(tb testing.TB, dir string) store.Backend {
	tb.Helper()
	st, err := bolt.Open(filepath.Join(dir, bolt.FileName), bolt.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

// newForTest is New on cfg with the bbolt file of its data directory.
func newForTest(tb testing.TB, cfg Config) (*Server, error) {
	tb.Helper()
	if cfg.Store == nil && cfg.DataDir != "" {
		cfg.Store = openTestBolt(tb, cfg.DataDir)
	}
	return New(cfg)
}

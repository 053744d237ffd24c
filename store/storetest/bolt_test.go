package storetest_test

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/storetest"
)

// TestBolt runs the contract suite against the bbolt backend: one process owns the
// file, so every "node" is the same handle.
func TestBolt(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		Open: func(tb testing.TB, now func() time.Time, n int) []store.Backend {
			st, err := store.Open(filepath.Join(tb.TempDir(), store.FileName), store.Options{Now: now})
			if err != nil {
				tb.Fatal(err)
			}
			return slices.Repeat([]store.Backend{st}, n)
		},
	})
}

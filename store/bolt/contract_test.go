package bolt_test

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/bolt"
	"github.com/gardend/gardend/store/storetest"
)

// TestContract runs the contract suite against the bbolt backend: one process owns
// the file, so every "node" is the same handle.
func TestContract(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		Open: func(tb testing.TB, now func() time.Time, n int) []store.Backend {
			st, err := bolt.Open(filepath.Join(tb.TempDir(), bolt.FileName), bolt.Options{Now: now})
			if err != nil {
				tb.Fatal(err)
			}
			return slices.Repeat([]store.Backend{st}, n)
		},
	})
}

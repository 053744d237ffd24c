package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/postgres"
	"github.com/gardend/gardend/store/postgres/pgtest"
	"github.com/gardend/gardend/store/storetest"
)

// openNodes opens n stores on one fresh database: n nodes, each with its own pool.
func openNodes(tb testing.TB, now func() time.Time, n int) []*postgres.Store {
	tb.Helper()
	dsn := pgtest.NewDatabase(tb)
	var out []*postgres.Store
	for range n {
		st, err := postgres.Open(context.Background(), dsn, postgres.Options{Now: now, MaxConns: 8})
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, st)
	}
	return out
}

// TestContract runs the contract suite against PostgreSQL with every handle a node of
// its own.
func TestContract(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		MultiNode: true,
		Open: func(tb testing.TB, now func() time.Time, n int) []store.Backend {
			var out []store.Backend
			for _, st := range openNodes(tb, now, n) {
				out = append(out, st)
			}
			return out
		},
	})
}

// TestImageContent runs the image content contract: the bytes live in the database.
func TestImageContent(t *testing.T) {
	storetest.RunImageContent(t, storetest.ImageHarness{
		Open: func(tb testing.TB, now func() time.Time) (store.Backend, store.ImageContent) {
			st := openNodes(tb, now, 1)[0]
			return st, st
		},
	})
}

package store_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/gardend/gardend/store"
)

// mustOpenStore opens a store on a real file in a temporary directory and, at cleanup,
// runs bbolt's consistency check and the index check before closing it.
func mustOpenStore(tb testing.TB) *store.Store {
	tb.Helper()
	return openStore(tb, store.Options{})
}

// openStore is mustOpenStore with options (a test clock).
func openStore(tb testing.TB, opts store.Options) *store.Store {
	tb.Helper()
	st, err := store.Open(filepath.Join(tb.TempDir(), store.FileName), opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := st.Check(); err != nil {
			tb.Errorf("bbolt check: %v", err)
		}
		if err := st.CheckIndexes(); err != nil {
			tb.Errorf("index check: %v", err)
		}
		st.Close()
	})
	return st
}

func mustUser(tb testing.TB, st *store.Store, username string) store.User {
	tb.Helper()
	u, err := st.CreateUser(store.NewUser{Username: username, FirstName: "F", LastName: "L", PasswordHash: "not-a-real-hash"})
	if err != nil {
		tb.Fatal(err)
	}
	return u
}

func mustCompany(tb testing.TB, st *store.Store, creator store.User, name string) store.Company {
	tb.Helper()
	c, err := st.CreateCompany(creator.ID, name)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func mustGarden(tb testing.TB, st *store.Store, c store.Company, name string) store.Garden {
	tb.Helper()
	g, err := st.CreateGarden(c.ID, name)
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

func wantErr(tb testing.TB, err, target error) {
	tb.Helper()
	if !errors.Is(err, target) {
		tb.Fatalf("error %v, want %v", err, target)
	}
}

func gardenIDs(gs []store.Garden) []uint64 {
	ids := make([]uint64, len(gs))
	for i, g := range gs {
		ids[i] = g.ID
	}
	return ids
}

// corners is a valid coordinate set.
var corners = store.Coordinates{
	{Name: "top_left", Latitude: 52.5, Longitude: 13.4},
	{Name: "top_right", Latitude: 52.5, Longitude: 13.5},
	{Name: "bottom_left", Latitude: 52.4, Longitude: 13.4},
}

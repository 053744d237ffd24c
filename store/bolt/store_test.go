package bolt_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/bolt"
)

// The bbolt backend's own behaviour: its file, its lock, its buckets. Everything
// else is the contract suite's (contract_test.go).

func newUser(tb testing.TB, st store.AccountStore, name string) store.User {
	tb.Helper()
	u, err := st.CreateUser(store.NewUser{Username: name, FirstName: "F", LastName: "L", PasswordHash: "h"})
	if err != nil {
		tb.Fatal(err)
	}
	return u
}

func TestOpenLockedFailsFast(t *testing.T) {
	path := filepath.Join(t.TempDir(), bolt.FileName)
	first, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	start := time.Now()
	_, err = bolt.Open(path, bolt.Options{Timeout: 200 * time.Millisecond})
	if !errors.Is(err, store.ErrLocked) {
		t.Fatalf("second open: %v, want ErrLocked", err)
	}
	if waited := time.Since(start); waited > 2*time.Second {
		t.Fatalf("second open took %v", waited)
	}
}

func TestReopenKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), bolt.FileName)
	st, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	newUser(t, st, "ann")
	id, _, err := st.DataID()
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	st, err = bolt.Open(path, bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.UserByUsername("ann"); err != nil {
		t.Fatal(err)
	}
	// A read-only handle reads the identity; it cannot make one.
	if again, created, err := st.DataID(); err != nil || created || again != id {
		t.Fatalf("reopened: %q %v %v", again, created, err)
	}
}

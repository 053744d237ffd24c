package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/postgres/pgtest"
)

// TestStoppedNodeReleasesItsLocks: node 1 stops inside a write transaction, holding
// the row lock of ann's account, and sends nothing more (as a process stopped with
// SIGSTOP would). Node 2's write of the same row must not wait out its deadline and
// fail: the database ends node 1's idle transaction and node 2 goes on. Node 1's
// write, when it wakes up, is run again or reported unavailable, never half-done.
func TestStoppedNodeReleasesItsLocks(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	var nodes []*Store
	for range 2 {
		st, err := Open(context.Background(), dsn, Options{MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		nodes = append(nodes, st)
	}
	n1, n2 := nodes[0], nodes[1]
	ann, err := n1.CreateUser(store.NewUser{Username: "ann", FirstName: "A", LastName: "A", PasswordHash: "h"})
	if err != nil {
		t.Fatal(err)
	}
	reached, release := pause(n1, "before-commit")
	first := make(chan error, 1)
	go func() {
		_, err := n1.UpdateUser(ann.ID, store.UserUpdate{FirstName: ptr("Annie")})
		first <- err
	}()
	<-reached // node 1 holds the row lock and is silent

	began := time.Now()
	_, err = n2.UpdateUser(ann.ID, store.UserUpdate{LastName: ptr("Lee")})
	took := time.Since(began)
	release()
	if err != nil {
		t.Fatalf("node 2's write behind the stopped node's lock: %v after %v", err, took.Round(time.Millisecond))
	}
	t.Logf("node 2's write went through after %v (operation deadline %v)", took.Round(time.Millisecond), DefaultOpTimeout)
	if err := <-first; err != nil && !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("node 1's write after it woke up: %v", err)
	}
	u, err := n2.UserByID(ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	if u.LastName != "Lee" {
		t.Errorf("last name %q, want node 2's Lee", u.LastName)
	}
	if err := n2.CheckIndexes(); err != nil {
		t.Fatal(err)
	}
}

// TestSessionLimits: a node's sessions carry the limits, and a DSN's own setting
// wins.
func TestSessionLimits(t *testing.T) {
	got := sessionLimits(5*time.Second, map[string]string{"lock_timeout": "0"})
	want := "SET idle_in_transaction_session_timeout = 2500; SET statement_timeout = 5000"
	if got != want {
		t.Errorf("session limits: %q, want %q", got, want)
	}
	dsn := pgtest.NewDatabase(t)
	st, err := Open(context.Background(), dsn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	var idle, lock, stmt string
	err = st.pool.QueryRow(context.Background(), `SELECT current_setting('idle_in_transaction_session_timeout'),
		current_setting('lock_timeout'), current_setting('statement_timeout')`).Scan(&idle, &lock, &stmt)
	if err != nil {
		t.Fatal(err)
	}
	if idle != "2500ms" || lock != "5s" || stmt != "5s" {
		t.Errorf("a node's session: idle in transaction %s, lock %s, statement %s", idle, lock, stmt)
	}
}

func ptr[T any](v T) *T { return &v }

// TestExportOutlivesSessionLimits: an export to a slow reader (a backup downloaded
// over a thin line) keeps its transaction open far longer than the session limits
// allow operations; it lifts them and completes.
func TestExportOutlivesSessionLimits(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	const opTimeout = time.Second
	st, err := Open(context.Background(), dsn, Options{OpTimeout: opTimeout})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	for i := range 100 {
		if _, err := st.CreateUser(store.NewUser{Username: fmt.Sprintf("user%03d", i), FirstName: "F", LastName: "L", PasswordHash: "h"}); err != nil {
			t.Fatal(err)
		}
	}
	slow := &slowWriter{stall: 2 * opTimeout}
	if err := st.Export(context.Background(), slow); err != nil {
		t.Fatalf("export to a reader that stalls %v once: %v", slow.stall, err)
	}
	if !slow.stalled || !bytes.Contains(slow.buf.Bytes(), []byte("user099")) {
		t.Fatalf("the export did not stall inside its transaction, or lost records (%d bytes)", slow.buf.Len())
	}
}

// slowWriter stalls for stall at its first write: a client that reads slowly.
type slowWriter struct {
	stall   time.Duration
	stalled bool
	buf     bytes.Buffer
}

func (w *slowWriter) Write(p []byte) (int, error) {
	if !w.stalled {
		w.stalled = true
		time.Sleep(w.stall) // the slow client itself, not an ordering
	}
	return w.buf.Write(p)
}

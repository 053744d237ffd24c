package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/postgres/pgtest"
)

// These tests force the interleavings that matter with a hook inside one node's
// transaction, and watch the other node wait in pg_stat_activity: the locks of the
// design, not luck, keep the rules.

func openPair(t *testing.T) (*Store, *Store, string) {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	var out []*Store
	for range 2 {
		st, err := Open(context.Background(), dsn, Options{MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		out = append(out, st)
	}
	return out[0], out[1], dsn
}

// pause makes st stop at point until the returned release is called; reached is
// closed when it gets there.
func pause(st *Store, point string) (reached chan struct{}, release func()) {
	reached = make(chan struct{})
	gate := make(chan struct{})
	st.hook = func(p string) {
		if p == point {
			st.hook = nil
			close(reached)
			<-gate
		}
	}
	return reached, func() { close(gate) }
}

// waitForLockWait returns once some session of the database waits for a lock.
func waitForLockWait(t *testing.T, observer *Store) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var waiting int
		err := observer.pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no session waits for a lock")
		}
		time.Sleep(5 * time.Millisecond) // polling the server's view; nothing to block on
	}
}

func TestLastAdminDemotionsSerialise(t *testing.T) {
	for _, op := range []string{"remove", "demote"} {
		t.Run(op, func(t *testing.T) {
			n1, n2, _ := openPair(t)
			a, _ := n1.CreateUser(store.NewUser{Username: "a", FirstName: "A", LastName: "A", PasswordHash: "h"})
			n1.CreateUser(store.NewUser{Username: "b", FirstName: "B", LastName: "B", PasswordHash: "h"})
			c, err := n1.CreateCompany(a.ID, "c")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := n1.SetCompanyPermission(c.ID, a.ID, "b", store.LevelAdmin); err != nil {
				t.Fatal(err)
			}
			change := func(st *Store, username string) error {
				if op == "remove" {
					_, err := st.RemoveCompanyPermission(c.ID, 0, username)
					return err
				}
				_, err := st.SetCompanyPermission(c.ID, 0, username, store.LevelUser)
				return err
			}
			// Node 1 has checked that a is not the last admin and stops before writing.
			reached, release := pause(n1, "company-permission-checked")
			first := make(chan error)
			go func() { first <- change(n1, "a") }()
			<-reached
			// Node 2 wants b gone too; under snapshot reads it would see two admins.
			second := make(chan error)
			go func() { second <- change(n2, "b") }()
			waitForLockWait(t, n1)
			release()
			if err := <-first; err != nil {
				t.Fatalf("first demotion: %v", err)
			}
			if err := <-second; !errors.Is(err, store.ErrForbidden) {
				t.Fatalf("second demotion: %v, want ErrForbidden (b is the last admin now)", err)
			}
			if err := n2.CheckIndexes(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestClaimSkipsLockedJobs(t *testing.T) {
	n1, n2, _ := openPair(t)
	a, _ := n1.CreateUser(store.NewUser{Username: "a", FirstName: "A", LastName: "A", PasswordHash: "h"})
	c, _ := n1.CreateCompany(a.ID, "c")
	g, _ := n1.CreateGarden(c.ID, "g")
	if _, err := n1.CreateBed(g.ID, "p1", ""); err != nil {
		t.Fatal(err)
	}
	var jobs []store.CloudJob
	for i := range 4 {
		jobs = append(jobs, store.CloudJob{Project: "p1", Cloud: fmt.Sprintf("c%d", i), CloudInputs: store.CloudInputs{Frame: "map"}})
	}
	if _, err := n1.EnqueueClouds(jobs, time.Hour); err != nil {
		t.Fatal(err)
	}
	// Node 1 holds the row locks of its two jobs, claim not yet committed.
	reached, release := pause(n1, "claimed")
	first := make(chan []store.CloudJob)
	go func() {
		claimed, _, _, err := n1.ClaimCloudJobs("n1", 2, time.Minute)
		if err != nil {
			t.Error(err)
		}
		first <- claimed
	}()
	<-reached
	// Node 2 neither waits for them nor takes them: it gets the other two at once.
	claimed, _, _, err := n2.ClaimCloudJobs("n2", 0, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	release()
	mine := <-first
	clouds := func(js []store.CloudJob) (out []string) {
		for _, j := range js {
			out = append(out, j.Cloud)
		}
		return out
	}
	if !slices.Equal(clouds(mine), []string{"c0", "c1"}) || !slices.Equal(clouds(claimed), []string{"c2", "c3"}) {
		t.Fatalf("node 1 claimed %v, node 2 %v", clouds(mine), clouds(claimed))
	}
}

// TestDeleteLastBedWaitsForNewBed: a bed created for the project commits while the
// deletion of its last other bed waits on the project's row; the project stays.
func TestDeleteLastBedWaitsForNewBed(t *testing.T) {
	n1, n2, _ := openPair(t)
	a, _ := n1.CreateUser(store.NewUser{Username: "a", FirstName: "A", LastName: "A", PasswordHash: "h"})
	c, _ := n1.CreateCompany(a.ID, "c")
	g1, _ := n1.CreateGarden(c.ID, "g1")
	g2, _ := n1.CreateGarden(c.ID, "g2")
	old, err := n1.CreateBed(g1.ID, "p1", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := n1.CompleteCloudJob(store.PlantPosition{Project: "p1", Cloud: "c1", CloudInputs: store.CloudInputs{Frame: "map"}}); err != nil {
		t.Fatal(err)
	}
	// Node 2 creates a bed for p1 inside a transaction it keeps open, holding the
	// project's row: the deletion must wait and then see the new bed.
	ctx := context.Background()
	tx, err := n2.pool.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO projects (uuid) VALUES ('p1') ON CONFLICT (uuid) DO UPDATE SET uuid = excluded.uuid`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO beds (garden_id, project, name) VALUES ($1, 'p1', '')`, g2.ID); err != nil {
		t.Fatal(err)
	}
	done := make(chan store.Removed)
	go func() {
		r, err := n1.DeleteBed(g1.ID, old.ID)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	waitForLockWait(t, n2)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if r := <-done; len(r.BedUUIDs) != 0 {
		t.Fatalf("deletion dropped %v though a new bed refers to it", r.BedUUIDs)
	}
	if st, _ := n1.CloudState("p1"); len(st.Positions) != 1 {
		t.Fatalf("positions of p1: %v", st.Positions)
	}
	if err := n1.CheckIndexes(); err != nil {
		t.Fatal(err)
	}
}

// TestPoolSize: a node's pool is 16 connections unless the DSN or the options say
// otherwise.
func TestPoolSize(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	for _, tc := range []struct {
		dsn  string
		opts Options
		want int32
	}{
		{dsn, Options{}, DefaultMaxConns},
		{dsn + "&pool_max_conns=3", Options{}, 3},
		{dsn + "&pool_max_conns=3", Options{MaxConns: 5}, 5},
	} {
		st, err := Open(context.Background(), tc.dsn, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.pool.Config().MaxConns; got != tc.want {
			t.Errorf("%s %+v: pool of %d, want %d", tc.dsn, tc.opts, got, tc.want)
		}
		st.Close()
	}
}

// TestLogKeyRaces: two nodes create a log with one idempotency key at once, in both
// orders that matter; one log is made and both answer it.
func TestLogKeyRaces(t *testing.T) {
	for _, point := range []string{"log-key-checked", "log-inserted"} {
		t.Run(point, func(t *testing.T) {
			n1, n2, _ := openPair(t)
			a, _ := n1.CreateUser(store.NewUser{Username: "a", FirstName: "A", LastName: "A", PasswordHash: "h"})
			c, _ := n1.CreateCompany(a.ID, "c")
			g, _ := n1.CreateGarden(c.ID, "g")
			typ, title := store.LogObservation, "Aphids"
			p := store.LogPatch{Type: &typ, Title: &title}
			type result struct {
				l       store.Log
				created bool
				err     error
			}
			// Node 1 stops after finding no log of the key ("log-key-checked") or after
			// inserting its own, not yet committed ("log-inserted").
			reached, release := pause(n1, point)
			first := make(chan result)
			go func() {
				l, created, err := n1.CreateLogOnce(g.ID, a.ID, "key-1", p, nil)
				first <- result{l, created, err}
			}()
			<-reached
			second := make(chan result)
			go func() {
				l, created, err := n2.CreateLogOnce(g.ID, a.ID, "key-1", p, nil)
				second <- result{l, created, err}
			}()
			var r1, r2 result
			if point == "log-inserted" {
				// Node 2's insert waits for node 1's row, then does nothing.
				waitForLockWait(t, n1)
				release()
				r1, r2 = <-first, <-second
			} else {
				// Node 2 inserts and commits first; node 1's insert then does nothing.
				r2 = <-second
				release()
				r1 = <-first
			}
			if r1.err != nil || r2.err != nil {
				t.Fatalf("errors %v, %v", r1.err, r2.err)
			}
			if r1.l.ID != r2.l.ID || r1.created == r2.created {
				t.Fatalf("node 1: log %d created %v; node 2: log %d created %v", r1.l.ID, r1.created, r2.l.ID, r2.created)
			}
			page, err := n2.ListLogs(g.ID, store.LogFilter{})
			if err != nil || len(page.Logs) != 1 {
				t.Fatalf("%d logs, %v", len(page.Logs), err)
			}
		})
	}
}

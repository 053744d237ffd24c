package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/postgres"
	"github.com/gardend/gardend/store/postgres/pgtest"
)

// TestLostCommitAnswer: the connection drops right after a write's COMMIT went to the
// server, so the write committed and its answer is lost; or it drops instead of the
// COMMIT, so it did not. Either way the operation succeeds and takes effect exactly
// once: it is neither applied twice nor reported failed (nor "taken") for what it did
// itself.
func TestLostCommitAnswer(t *testing.T) {
	type op struct {
		name string
		// run does the write; count says how many times it took effect.
		run   func(st *postgres.Store, f *fixture) error
		count string
		// at is the statement cut, when it is not the COMMIT of a transaction.
		at string
	}
	ops := []op{
		{"create company", func(st *postgres.Store, f *fixture) error {
			_, err := st.CreateCompany(f.user.ID, "Orchard")
			return err
		}, `SELECT count(*) FROM companies WHERE name = 'Orchard'`, ""},
		{"create user", func(st *postgres.Store, f *fixture) error {
			_, err := st.CreateUser(store.NewUser{Username: "bob", FirstName: "B", LastName: "B", PasswordHash: "h"})
			return err
		}, `SELECT count(*) FROM users WHERE username = 'bob'`, ""},
		{"create garden", func(st *postgres.Store, f *fixture) error {
			_, err := st.CreateGarden(f.company.ID, "Plot")
			return err
		}, `SELECT count(*) FROM gardens WHERE name = 'Plot'`, ""},
		{"create bed", func(st *postgres.Store, f *fixture) error {
			_, err := st.CreateBedUpTo(f.garden.ID, "p2", "Bed", 2)
			return err
		}, `SELECT count(*) FROM beds WHERE project = 'p2'`, ""},
		{"claim downloads", func(st *postgres.Store, f *fixture) error {
			claimed, _, _, err := st.ClaimCloudJobs("node-a", 1, time.Minute)
			if err == nil && len(claimed) != 1 {
				return fmt.Errorf("claimed %d jobs, want 1", len(claimed))
			}
			return err
		}, `SELECT count(*) FROM cloud_jobs WHERE claimed_by = 'node-a'`, ""},
		{"record a failed download", func(st *postgres.Store, f *fixture) error {
			j, ok, err := st.RecordCloudFailure("p1", "c0", store.CloudInputs{Frame: "map"}, "timeout", store.RetryPolicy{MaxAttempts: 9, Backoff: time.Second, MaxBackoff: time.Minute})
			if err == nil && (!ok || j.Attempts != 1) {
				return fmt.Errorf("attempts %d (ok %v), want 1", j.Attempts, ok)
			}
			return err
		}, `SELECT sum(attempts) FROM cloud_jobs`, ""},
		{"log out everywhere", func(st *postgres.Store, f *fixture) error {
			_, err := st.RevokeUserTokens(f.user.ID, nil)
			return err
		}, `SELECT credentials_gen FROM users WHERE username = 'ann'`, ""},
		{"sweep expired tokens", func(st *postgres.Store, f *fixture) error {
			n, err := st.SweepExpiredTokens()
			if err == nil && n != 1 {
				return fmt.Errorf("swept %d tokens, want 1", n)
			}
			return err
		}, `SELECT 1 + count(*) FROM tokens`, ""},
		{"store an image's record", func(st *postgres.Store, f *fixture) error {
			_, _, err := st.PutImage(context.Background(), f.garden.ID, bytes.NewReader([]byte("png")))
			return err
		}, `SELECT count(*) FROM images`, "INSERT INTO images"},
		{"store an image's content", func(st *postgres.Store, f *fixture) error {
			_, _, err := st.PutImage(context.Background(), f.garden.ID, bytes.NewReader([]byte("png")))
			return err
		}, `SELECT count(*) FROM image_chunks`, "INSERT INTO image_chunks"},
		{"save widgets", func(st *postgres.Store, f *fixture) error {
			return st.SaveWidgets(f.user.ID, []byte(`{"a":1}`))
		}, `SELECT count(*) FROM widgets`, "INSERT INTO widgets"},
		{"create a token", func(st *postgres.Store, f *fixture) error {
			return st.CreateToken(f.user.ID, store.TokenDigest(strings.Repeat("cd", 32)), time.Now().Add(time.Hour))
		}, `SELECT count(*) FROM tokens WHERE expiry > now()`, "INSERT INTO tokens"},
		{"upgrade a password hash", func(st *postgres.Store, f *fixture) error {
			replaced, err := st.ReplacePasswordHash(f.user.ID, "h", "h2")
			if err == nil && !replaced {
				return errors.New("the hash was not replaced")
			}
			return err
		}, `SELECT count(*) FROM users WHERE password_hash = 'h2'`, "UPDATE users SET password_hash"},
		{"make the install's identity", func(st *postgres.Store, f *fixture) error {
			_, created, err := st.DataID()
			if err == nil && !created {
				return errors.New("DataID says another call made the identity")
			}
			return err
		}, `SELECT count(*) FROM meta WHERE name = 'data_id'`, "INSERT INTO meta"},
	}
	// Cut instead of the COMMIT, an operation simply runs again: a few show it.
	rerun := map[string]bool{"create company": true, "create user": true, "claim downloads": true, "store an image's record": true}
	for _, mode := range []pgtest.CutMode{pgtest.CutAfterCommit, pgtest.CutBeforeCommit} {
		for _, o := range ops {
			if mode == pgtest.CutBeforeCommit && !rerun[o.name] {
				continue
			}
			t.Run(fmt.Sprintf("%s/%v", o.name, map[pgtest.CutMode]string{pgtest.CutAfterCommit: "after", pgtest.CutBeforeCommit: "instead of"}[mode]), func(t *testing.T) {
				dsn := pgtest.NewDatabase(t)
				relay, through := pgtest.NewRelay(t, dsn)
				st, err := postgres.Open(context.Background(), through, postgres.Options{})
				if err != nil {
					t.Fatal(err)
				}
				defer func() { _ = st.Close() }()
				f := newFixture(t, st)
				relay.ArmAt(mode, o.at)
				if err := o.run(st, f); err != nil {
					t.Fatalf("%s with the COMMIT cut: %v", o.name, err)
				}
				if relay.Cuts() != 1 {
					t.Fatalf("the relay cut %d COMMITs, want 1", relay.Cuts())
				}
				var n int
				if err := adminConn(t, dsn).QueryRow(context.Background(), o.count).Scan(&n); err != nil {
					t.Fatal(err)
				}
				if n != 1 {
					t.Errorf("%s took effect %d times, want once", o.name, n)
				}
			})
		}
	}
}

// fixture is what the writes of TestLostCommitAnswer work on: ann, her company and
// garden, a bed of project p1 with one queued download, and one expired token.
type fixture struct {
	user    store.User
	company store.Company
	garden  store.Garden
}

func newFixture(t *testing.T, st *postgres.Store) *fixture {
	t.Helper()
	var f fixture
	var err error
	if f.user, err = st.CreateUser(store.NewUser{Username: "ann", FirstName: "A", LastName: "A", PasswordHash: "h"}); err != nil {
		t.Fatal(err)
	}
	if f.company, err = st.CreateCompany(f.user.ID, "Farm"); err != nil {
		t.Fatal(err)
	}
	if f.garden, err = st.CreateGarden(f.company.ID, "Field"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateBed(f.garden.ID, "p1", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := st.EnqueueClouds([]store.CloudJob{{Project: "p1", Cloud: "c0", CloudInputs: store.CloudInputs{Frame: "map"}}}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateToken(f.user.ID, store.TokenDigest(strings.Repeat("ab", 32)), time.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	return &f
}

package postgres

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/postgres/pgtest"
)

// A database at schema 2 (looks from the hand-written table, case kept) is migrated to
// Unicode's confusables: every account gets its looks, accounts that now look alike
// all keep working, and a new lookalike of any of them is refused.
func TestMigrationReindexesUsernameLooks(t *testing.T) {
	dsn := pgtest.NewEmptyDatabase(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,
		applied timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms[:2] {
		if _, err := conn.Exec(ctx, m.sql); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
			t.Fatal(err)
		}
	}
	// As schema 2 stored them: the old skeleton kept case and knew no capital I.
	stored := []string{"alice", "aIice", "Ivan"}
	for i, name := range stored {
		if _, err := conn.Exec(ctx, `INSERT INTO users (id, username, first_name, last_name, email, password_hash, date_joined, username_look)
			VALUES ($1, $2, 'F', 'L', '', 'h', now(), $2)`, i+1, name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, `SELECT setval(pg_get_serial_sequence('users', 'id'), 3)`); err != nil {
		t.Fatal(err)
	}

	st, err := Open(ctx, dsn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.CheckIndexes(); err != nil {
		t.Fatalf("looks after the migration: %v", err)
	}
	for i, name := range stored {
		if u, err := st.UserByUsername(name); err != nil || u.ID != uint64(i+1) {
			t.Errorf("UserByUsername(%q) = %d, %v; want account %d", name, u.ID, err, i+1)
		}
	}
	for _, name := range []string{"ALICE", "aǀice", "ivan", "lvan"} {
		if _, err := st.CreateUser(store.NewUser{Username: name, FirstName: "F", LastName: "L", PasswordHash: "h"}); !errors.Is(err, store.ErrConflict) {
			t.Errorf("new %q beside %q: %v", name, stored, err)
		}
	}
}

// The look columns are built with the confusables release the table holds: a new
// release changes them and needs a migration that re-indexes (reindexUsernameLooks).
func TestLookIndexMatchesConfusables(t *testing.T) {
	if lookIndexVersion != store.ConfusablesVersion {
		t.Fatalf("the look columns were last rebuilt for confusables %s, the table is %s: add a migration whose data step runs reindexUsernameLooks, then raise lookIndexVersion",
			lookIndexVersion, store.ConfusablesVersion)
	}
}

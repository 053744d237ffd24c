package bolt

import (
	"errors"
	"path/filepath"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/gardend/gardend/store"
)

func openTestStore(t *testing.T, path string) *Store {
	t.Helper()
	st, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.CheckIndexes(); err != nil {
			t.Errorf("index check: %v", err)
		}
		st.Close()
	})
	return st
}

func newTestUser(name string) store.NewUser {
	return store.NewUser{Username: name, FirstName: "F", LastName: "L", PasswordHash: "h"}
}

func ptrTo[T any](v T) *T { return &v }

// A database from before normalisation: its accounts keep their names and work,
// including names the new rules refuse; their plain forms find them; no new account
// may take a lookalike of them.
func TestLegacyUsernamesKeepWorking(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	st, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	legacy := map[string]uint64{}
	err = st.db.Update(func(tx *bbolt.Tx) error {
		for _, name := range []string{"ｂｏｂ", "раypal", "ａｎｎ", "ann"} {
			id, _ := tx.Bucket(bucketUsers).NextSequence()
			rec := userRecord{User: store.User{ID: id, Username: name, FirstName: "F", LastName: "L"}, PasswordHash: "h"}
			if err := putJSON(tx.Bucket(bucketUsers), itob(id), rec); err != nil {
				return err
			}
			if err := tx.Bucket(bucketUsernames).Put([]byte(name), itob(id)); err != nil {
				return err
			}
			legacy[name] = id
		}
		// As the release before the skeleton index left it.
		if err := tx.DeleteBucket(bucketUsernameLooks); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keySchemaVersion, itob(1))
	})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()

	st = openTestStore(t, path) // migrates to schema 2
	for name, id := range legacy {
		if u, err := st.UserByUsername(name); err != nil || u.ID != id {
			t.Errorf("UserByUsername(%q) = %+v, %v; want account %d", name, u, err, id)
		}
	}
	// The plain form finds the one legacy account it stands for...
	if u, err := st.UserByUsername("bob"); err != nil || u.ID != legacy["ｂｏｂ"] {
		t.Errorf("bob: %+v, %v", u, err)
	}
	// ...and the exact name wins where two legacy accounts normalise alike.
	if u, err := st.UserByUsername("ann"); err != nil || u.ID != legacy["ann"] {
		t.Errorf("ann: %+v, %v", u, err)
	}
	for _, name := range []string{"bob", "ｂｏｂ", "paypal", "ann"} {
		if _, err := st.CreateUser(newTestUser(name)); !errors.Is(err, store.ErrConflict) {
			t.Errorf("new %q beside the legacy accounts: %v", name, err)
		}
	}
	// Other operations on a legacy name that the new rules refuse still work.
	if _, err := st.UpdateUser(legacy["раypal"], store.UserUpdate{FirstName: ptrTo("Pay")}); err != nil {
		t.Errorf("update of a mixed-script legacy account: %v", err)
	}
	if u, err := st.UpdateUser(legacy["ｂｏｂ"], store.UserUpdate{Username: ptrTo("bob")}); err != nil || u.Username != "bob" {
		t.Errorf("legacy ｂｏｂ renamed to its normal form: %+v, %v", u, err)
	}
}

// A database at schema 2 (looks from the hand-written table, case kept) is migrated to
// Unicode's confusables: every account gets its looks, accounts that now look alike
// all keep working, and a new lookalike of any of them is refused.
func TestMigrationReindexesUsernameLooks(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	st, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]uint64{}
	err = st.db.Update(func(tx *bbolt.Tx) error {
		for _, name := range []string{"alice", "aIice", "Ivan"} {
			id, _ := tx.Bucket(bucketUsers).NextSequence()
			rec := userRecord{User: store.User{ID: id, Username: name, FirstName: "F", LastName: "L"}, PasswordHash: "h"}
			if err := putJSON(tx.Bucket(bucketUsers), itob(id), rec); err != nil {
				return err
			}
			if err := tx.Bucket(bucketUsernames).Put([]byte(name), itob(id)); err != nil {
				return err
			}
			// As schema 2 indexed them: the old skeleton kept case and knew no capital I.
			if err := tx.Bucket(bucketUsernameLooks).Put(append(append([]byte(name), 0), itob(id)...), nil); err != nil {
				return err
			}
			stored[name] = id
		}
		return tx.Bucket(bucketMeta).Put(keySchemaVersion, itob(2))
	})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()

	st = openTestStore(t, path) // migrates to schema 3; CheckIndexes at cleanup
	if err := st.CheckIndexes(); err != nil {
		t.Fatalf("looks after the migration: %v", err)
	}
	for name, id := range stored {
		if u, err := st.UserByUsername(name); err != nil || u.ID != id {
			t.Errorf("UserByUsername(%q) = %d, %v; want account %d", name, u.ID, err, id)
		}
	}
	for _, name := range []string{"ALICE", "aǀice", "ivan", "lvan"} {
		if _, err := st.CreateUser(newTestUser(name)); !errors.Is(err, store.ErrConflict) {
			t.Errorf("new %q beside %v: %v", name, stored, err)
		}
	}
	// A rename between the accounts that look alike keeps working for each.
	if _, err := st.UpdateUser(stored["aIice"], store.UserUpdate{FirstName: ptrTo("Al")}); err != nil {
		t.Errorf("update of a stored lookalike: %v", err)
	}
}

// The look index is built with the confusables release the table holds: a new
// release changes the looks and needs a migration that re-indexes.
func TestLookIndexMatchesConfusables(t *testing.T) {
	if lookIndexVersion != store.ConfusablesVersion {
		t.Fatalf("the look index was last rebuilt for confusables %s, the table is %s: append a migration that runs reindexUsernameLooks, then raise lookIndexVersion",
			lookIndexVersion, store.ConfusablesVersion)
	}
}

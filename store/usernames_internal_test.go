package store

import (
	"errors"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func TestValidateNewUsername(t *testing.T) {
	for name, ok := range map[string]bool{
		"bob":         true,
		"ｂｏｂ":         true, // fullwidth: stored as bob
		"𝐛𝐨𝐛":         true, // mathematical bold: stored as bob
		"José_2":      true,
		"Ελληνικά":    true,
		"иван.петров": true,
		"山田taro":      true, // Han beside Latin, as Japanese names are written
		"やまだ太郎":       true,
		"김민준kim":      true,
		"bоb":         false, // Cyrillic о between Latin letters
		"раypal":      false,
		"αlpha":       false, // Greek α
		"ｂоｂ":         false,
		"bob smith":   false,
		"½":           false, // NFKC: 1⁄2, and ⁄ is no username character
	} {
		if got := ValidateNewUsername(name) == ""; got != ok {
			t.Errorf("ValidateNewUsername(%q) ok=%v, want %v (%s)", name, got, ok, ValidateNewUsername(name))
		}
	}
}

func TestUsernameSkeleton(t *testing.T) {
	for a, b := range map[string]string{
		"coco":   "сосо", // all Cyrillic
		"ABE":    "ΑΒΕ",  // all Greek
		"ann":    "𝐚𝐧𝐧",
		"pop":    "рор",
		"xoxo.1": "хохо.1",
	} {
		if UsernameSkeleton(a) != UsernameSkeleton(b) {
			t.Errorf("%q and %q look alike but have skeletons %q and %q", a, b, UsernameSkeleton(a), UsernameSkeleton(b))
		}
	}
	for a, b := range map[string]string{"bob": "Bob", "jose": "josé", "ivan": "иван"} {
		if UsernameSkeleton(a) == UsernameSkeleton(b) {
			t.Errorf("%q and %q share the skeleton %q", a, b, UsernameSkeleton(a))
		}
	}
}

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

func newTestUser(name string) NewUser {
	return NewUser{Username: name, FirstName: "F", LastName: "L", PasswordHash: "h"}
}

// Names are stored normalised, and a name that looks like a taken one is refused
// whichever of the two came first.
func TestUsernamesNormalisedAndUnconfusable(t *testing.T) {
	st := openTestStore(t, filepath.Join(t.TempDir(), FileName))
	bob, err := st.CreateUser(newTestUser("ｂｏｂ"))
	if err != nil || bob.Username != "bob" {
		t.Fatalf("created %+v, %v; want bob", bob, err)
	}
	for _, name := range []string{"bob", "𝐛𝐨𝐛", "ｂｏｂ"} {
		if _, err := st.CreateUser(newTestUser(name)); !errors.Is(err, ErrConflict) {
			t.Errorf("second %q: %v, want ErrConflict", name, err)
		}
		if u, err := st.UserByUsername(name); err != nil || u.ID != bob.ID {
			t.Errorf("UserByUsername(%q) = %+v, %v", name, u, err)
		}
	}
	coco, err := st.CreateUser(newTestUser("coco"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateUser(newTestUser("сосо")); !errors.Is(err, ErrConflict) {
		t.Fatalf("Cyrillic сосо beside coco: %v", err)
	}
	if _, err := st.UserByUsername("сосо"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a lookalike finds an account: %v", err)
	}
	// The other way round: a Cyrillic name first, then its Latin lookalike.
	if _, err := st.CreateUser(newTestUser("рор")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateUser(newTestUser("pop")); !errors.Is(err, ErrConflict) {
		t.Fatalf("pop beside Cyrillic рор: %v", err)
	}
	// Renames follow the same rules; an account may take a lookalike of its own name.
	if _, err := st.UpdateUser(coco.ID, UserUpdate{Username: ptrTo("ｂｏｂ")}); !errors.Is(err, ErrConflict) {
		t.Fatalf("rename onto bob: %v", err)
	}
	if _, err := st.UpdateUser(coco.ID, UserUpdate{Username: ptrTo("cоco")}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("rename to a mixed-script name: %v", err)
	}
	if u, err := st.UpdateUser(coco.ID, UserUpdate{Username: ptrTo("сосо")}); err != nil || u.Username != "сосо" {
		t.Fatalf("rename to a lookalike of its own name: %+v, %v", u, err)
	}
	if _, err := st.CreateUser(newTestUser("coco")); !errors.Is(err, ErrConflict) {
		t.Fatal("the old name's lookalike is still held by сосо")
	}
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
	err = st.db.Update(func(tx *bolt.Tx) error {
		for _, name := range []string{"ｂｏｂ", "раypal", "ａｎｎ", "ann"} {
			id, _ := tx.Bucket(bucketUsers).NextSequence()
			rec := userRecord{User: User{ID: id, Username: name, FirstName: "F", LastName: "L"}, PasswordHash: "h"}
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
		if _, err := st.CreateUser(newTestUser(name)); !errors.Is(err, ErrConflict) {
			t.Errorf("new %q beside the legacy accounts: %v", name, err)
		}
	}
	// Other operations on a legacy name that the new rules refuse still work.
	if _, err := st.UpdateUser(legacy["раypal"], UserUpdate{FirstName: ptrTo("Pay")}); err != nil {
		t.Errorf("update of a mixed-script legacy account: %v", err)
	}
	if u, err := st.UpdateUser(legacy["ｂｏｂ"], UserUpdate{Username: ptrTo("bob")}); err != nil || u.Username != "bob" {
		t.Errorf("legacy ｂｏｂ renamed to its normal form: %+v, %v", u, err)
	}
}

package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/gardend/gardend/store"
)

// A login token is created only while the account's credentials are the ones the
// login read before checking the password; a password change or a logout everywhere
// in between refuses it and writes nothing.
func TestCreateLoginTokenIsConditional(t *testing.T) {
	st, clock := mustOpen(t)
	exp := clock.Now().Add(time.Hour)
	read := newUser(t, st, "ann") // what a login reads before hashing

	clock.Advance(time.Minute)
	if err := st.CreateLoginToken(read, store.TokenDigest(tok("first")), exp); err != nil {
		t.Fatal(err)
	}
	u, _ := st.UserByUsername("ann")
	if u.LastLogin == nil || !u.LastLogin.Equal(clock.Now()) {
		t.Fatalf("last_login %v, want %v (set with the token)", u.LastLogin, clock.Now())
	}
	// Logging in again with what was read before does not change the credentials.
	if err := st.CreateLoginToken(read, store.TokenDigest(tok("second")), exp); err != nil {
		t.Fatal(err)
	}

	if _, err := st.RevokeUserTokens(read.ID, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateLoginToken(read, store.TokenDigest(tok("late")), exp); !errors.Is(err, store.ErrCredentialsChanged) {
		t.Fatalf("after a logout everywhere: %v, want ErrCredentialsChanged", err)
	}
	afterLogout, _ := st.UserByUsername("ann")
	hash := "new-hash"
	if _, err := st.UpdateUser(read.ID, store.UserUpdate{PasswordHash: &hash}); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateLoginToken(afterLogout, store.TokenDigest(tok("late2")), exp); !errors.Is(err, store.ErrCredentialsChanged) {
		t.Fatalf("after a password change: %v, want ErrCredentialsChanged", err)
	}
	if toks, _ := st.ListTokens(); len(toks) != 0 {
		t.Fatalf("tokens stored: %v", toks)
	}
	current, _ := st.UserByUsername("ann")
	if err := st.CreateLoginToken(current, store.TokenDigest(tok("now")), exp); err != nil {
		t.Fatalf("with the current credentials: %v", err)
	}
	ghost := current
	ghost.ID = 99
	if err := st.CreateLoginToken(ghost, store.TokenDigest(tok("ghost")), exp); !errors.Is(err, store.ErrCredentialsChanged) {
		t.Fatalf("missing user: %v", err)
	}
	if err := st.CreateLoginToken(current, store.TokenDigest("malformed"), exp); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("malformed digest: %v", err)
	}
}

// An update checked against the account as read applies only while its username and
// credentials are still those: a concurrent rename or password change makes it a
// conflict instead of letting the pair break the password ≠ username rule.
func TestUpdateUserIfUnchanged(t *testing.T) {
	st, _ := mustOpen(t)
	read := newUser(t, st, "ann")
	hash := "other-hash"
	if _, err := st.UpdateUser(read.ID, store.UserUpdate{PasswordHash: &hash}); err != nil {
		t.Fatal(err)
	}
	name := "annie"
	if _, err := st.UpdateUser(read.ID, store.UserUpdate{Username: &name, IfUnchanged: &read}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("rename checked against the old password: %v, want ErrConflict", err)
	}
	current, _ := st.UserByUsername("ann")
	renamed, err := st.UpdateUser(read.ID, store.UserUpdate{Username: &name, IfUnchanged: &current})
	if err != nil || renamed.Username != "annie" {
		t.Fatalf("rename checked against the current account: %+v, %v", renamed, err)
	}
	if _, err := st.UpdateUser(read.ID, store.UserUpdate{PasswordHash: &hash, IfUnchanged: &current}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("password change checked against the old name: %v, want ErrConflict", err)
	}
}

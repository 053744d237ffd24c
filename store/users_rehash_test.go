package store_test

import (
	"crypto/sha256"
	"testing"
	"time"
)

// TestReplacePasswordHash: the swap happens only over the hash it expects (a change of
// password made meanwhile wins) and keeps the user's tokens.
func TestReplacePasswordHash(t *testing.T) {
	st := mustOpenStore(t)
	u := mustUser(t, st, "imported")
	digest := sha256.Sum256([]byte("token"))
	if err := st.CreateToken(u.ID, digest, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if ok, err := st.ReplacePasswordHash(u.ID, u.PasswordHash, "$argon2id$new"); !ok || err != nil {
		t.Fatalf("replace: %v, %v", ok, err)
	}
	if ok, err := st.ReplacePasswordHash(u.ID, u.PasswordHash, "$argon2id$stale"); ok || err != nil {
		t.Fatalf("replace over a changed hash: %v, %v", ok, err)
	}
	got, _ := st.UserByID(u.ID)
	if got.PasswordHash != "$argon2id$new" {
		t.Errorf("hash %q", got.PasswordHash)
	}
	if _, err := st.Authenticate(digest); err != nil {
		t.Errorf("the token went with the rehash: %v", err)
	}
	if _, err := st.ReplacePasswordHash(999, "a", "b"); err == nil {
		t.Error("replaced the hash of a user that does not exist")
	}
}

package store_test

import (
	"context"
	"testing"

	"github.com/gardend/gardend/store"
)

func TestPasswordsHashVerify(t *testing.T) {
	pw := store.NewPasswords(store.Argon2Params{Time: 1, Memory: 64, Threads: 1, KeyLen: 32}, 2)
	ctx := context.Background()
	h1, err := pw.Hash(ctx, "garden-secret")
	if err != nil {
		t.Fatal(err)
	}
	h2, _ := pw.Hash(ctx, "garden-secret")
	if h1 == h2 {
		t.Fatal("two hashes of one password are equal: salt is not random")
	}
	for pass, want := range map[string]bool{"garden-secret": true, "garden-secreT": false, "": false} {
		if ok, err := pw.Verify(ctx, h1, pass); err != nil || ok != want {
			t.Errorf("Verify(%q) = %v, %v; want %v", pass, ok, err, want)
		}
	}
	// Parameters live in the hash: a verifier with other defaults still verifies it.
	other := store.NewPasswords(store.DefaultArgon2, 1)
	if ok, err := other.Verify(ctx, h1, "garden-secret"); !ok || err != nil {
		t.Fatalf("verify with other params: %v, %v", ok, err)
	}
	for _, bad := range []string{"", "$argon2id$v=19$m=64,t=1,p=1$$", "$bcrypt$x", "$argon2id$v=19$m=99999999,t=1,p=1$c2FsdA$a2V5"} {
		if ok, err := pw.Verify(ctx, bad, "x"); ok || err == nil {
			t.Errorf("Verify(%q) accepted a malformed hash", bad)
		}
	}
}

func BenchmarkDefaultArgon2(b *testing.B) {
	pw := store.NewPasswords(store.DefaultArgon2, 1)
	for b.Loop() {
		if _, err := pw.Hash(context.Background(), "garden-secret"); err != nil {
			b.Fatal(err)
		}
	}
}

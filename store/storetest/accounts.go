package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/store"
)

func testCreateUser(t *testing.T, h Harness) {
	st, clock := open(t, h)
	u := mustUser(t, st, "ann")
	if u.ID == 0 || !u.DateJoined.Equal(clock.Now()) || u.LastLogin != nil || u.PasswordHash != "h" {
		t.Fatalf("unexpected user %+v", u)
	}
	_, err := st.CreateUser(store.NewUser{Username: "ann", FirstName: "A", LastName: "B", PasswordHash: "x"})
	wantErr(t, err, store.ErrConflict)
	// Usernames compare case-sensitively, as the service being replaced did, but a
	// new one may not differ from an existing one in case only.
	_, err = st.CreateUser(store.NewUser{Username: "Ann", FirstName: "A", LastName: "B", PasswordHash: "x"})
	wantErr(t, err, store.ErrConflict)
	ann2, err := st.CreateUser(store.NewUser{Username: "Anna", FirstName: "A", LastName: "B", Email: "a@example.org", PasswordHash: "x", SiteAdmin: true})
	if err != nil {
		t.Fatalf("Anna: %v", err)
	}
	got, err := st.UserByUsername("ann")
	if err != nil || got.ID != u.ID || got.PasswordHash != "h" || got.FirstName != "F" || got.LastName != "L" {
		t.Fatalf("UserByUsername = %+v, %v", got, err)
	}
	if got, err := st.UserByID(ann2.ID); err != nil || got.Username != "Anna" || !got.SiteAdmin || got.Email != "a@example.org" {
		t.Fatalf("UserByID = %+v, %v", got, err)
	}
	_, err = st.UserByUsername("nobody")
	wantErr(t, err, store.ErrNotFound)
	_, err = st.UserByID(999)
	wantErr(t, err, store.ErrNotFound)
	all, err := st.ListUsers()
	if err != nil || len(all) != 2 || all[0].ID != u.ID || all[1].ID != ann2.ID {
		t.Fatalf("ListUsers = %+v, %v", all, err)
	}
	for _, u := range all {
		if u.PasswordHash != "" {
			t.Errorf("ListUsers hands out the hash of %s", u.Username)
		}
	}
}

func testCreateUserValidation(t *testing.T, h Harness) {
	st, _ := open(t, h)
	cases := []struct {
		name  string
		in    store.NewUser
		field string
	}{
		{"empty username", store.NewUser{FirstName: "a", LastName: "b", PasswordHash: "h"}, "username"},
		{"bad char", store.NewUser{Username: "a b", FirstName: "a", LastName: "b", PasswordHash: "h"}, "username"},
		{"long username", store.NewUser{Username: strings.Repeat("x", 151), FirstName: "a", LastName: "b", PasswordHash: "h"}, "username"},
		{"blank first", store.NewUser{Username: "a", FirstName: " ", LastName: "b", PasswordHash: "h"}, "first_name"},
		{"no last", store.NewUser{Username: "a", FirstName: "a", PasswordHash: "h"}, "last_name"},
		{"bad email", store.NewUser{Username: "a", FirstName: "a", LastName: "b", Email: "nope", PasswordHash: "h"}, "email"},
		{"no password", store.NewUser{Username: "a", FirstName: "a", LastName: "b"}, "password"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := st.CreateUser(tc.in)
			var v *store.ValidationError
			if !errors.As(err, &v) || !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("got %v, want a ValidationError", err)
			}
			if v.Fields[tc.field] == "" {
				t.Fatalf("field %s not named in %v", tc.field, v.Fields)
			}
		})
	}
	if users, _ := st.ListUsers(); len(users) != 0 {
		t.Errorf("invalid input stored users: %+v", users)
	}
}

func testUpdateUser(t *testing.T, h Harness) {
	st, _ := open(t, h)
	a, b := mustUser(t, st, "a"), mustUser(t, st, "b")
	_, err := st.UpdateUser(a.ID, store.UserUpdate{Username: ptr("b")})
	wantErr(t, err, store.ErrConflict)
	u, err := st.UpdateUser(a.ID, store.UserUpdate{Username: ptr("alice"), Email: ptr("alice@example.org"), FirstName: ptr("Alice")})
	if err != nil || u.Username != "alice" || u.Email != "alice@example.org" || u.FirstName != "Alice" || u.LastName != "L" {
		t.Fatalf("update = %+v, %v", u, err)
	}
	_, err = st.UserByUsername("a")
	wantErr(t, err, store.ErrNotFound)
	// The old name is free again; renaming to one's own name is no conflict.
	if _, err := st.UpdateUser(b.ID, store.UserUpdate{Username: ptr("a")}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.UpdateUser(b.ID, store.UserUpdate{Username: ptr("a")}); err != nil {
		t.Fatalf("renaming to the same name: %v", err)
	}
	_, err = st.UpdateUser(b.ID, store.UserUpdate{LastName: ptr("  ")})
	wantErr(t, err, store.ErrInvalid)
	_, err = st.UpdateUser(999, store.UserUpdate{FirstName: ptr("x")})
	wantErr(t, err, store.ErrNotFound)
	if got, _ := st.UserByID(b.ID); got.LastName != "L" || got.Username != "a" {
		t.Errorf("after failed updates: %+v", got)
	}
}

func testCreateLoginToken(t *testing.T, h Harness) {
	st, clock := open(t, h)
	u := mustUser(t, st, "ann")
	clock.Advance(time.Minute)
	verified, err := st.UserByUsername("ann")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateLoginToken(verified, store.TokenDigest(tok("a1")), clock.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	got, err := st.UserByID(u.ID)
	if err != nil || got.LastLogin == nil || !got.LastLogin.Equal(clock.Now()) {
		t.Fatalf("last login %v, %v; want %v", got.LastLogin, err, clock.Now())
	}
	if a, err := st.Authenticate(store.TokenDigest(tok("a1"))); err != nil || a.ID != u.ID {
		t.Fatalf("the login's token: %+v, %v", a, err)
	}
	// A logout everywhere, then a password change, after the check: no token.
	if _, err := st.RevokeUserTokens(u.ID, nil); err != nil {
		t.Fatal(err)
	}
	wantErr(t, st.CreateLoginToken(verified, store.TokenDigest(tok("a2")), clock.Now().Add(time.Hour)), store.ErrCredentialsChanged)
	verified, _ = st.UserByID(u.ID)
	if _, err := st.UpdateUser(u.ID, store.UserUpdate{PasswordHash: ptr("$argon2id$new")}); err != nil {
		t.Fatal(err)
	}
	wantErr(t, st.CreateLoginToken(verified, store.TokenDigest(tok("a3")), clock.Now().Add(time.Hour)), store.ErrCredentialsChanged)
	for _, name := range []string{"a2", "a3"} {
		if _, err := st.Authenticate(store.TokenDigest(tok(name))); !errors.Is(err, store.ErrUnauthenticated) {
			t.Errorf("token %s of a stale login works: %v", name, err)
		}
	}
	// A profile change keeps the credentials: the login goes through.
	verified, _ = st.UserByID(u.ID)
	if _, err := st.UpdateUser(u.ID, store.UserUpdate{FirstName: ptr("Anne")}); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateLoginToken(verified, store.TokenDigest(tok("a4")), clock.Now().Add(time.Hour)); err != nil {
		t.Fatalf("after a profile change: %v", err)
	}
	wantErr(t, st.CreateLoginToken(store.User{ID: 999}, store.TokenDigest(tok("a5")), clock.Now().Add(time.Hour)), store.ErrCredentialsChanged)
}

// testLookalikeUsernamesRefused: a new name, or a rename, that shares a look
// (store.UsernameLooks: UTS #39 skeletons, case-folded) with another account is
// refused with a conflict that says so; accounts stored before the rule, which look
// alike, all keep working under their exact names.
func testLookalikeUsernamesRefused(t *testing.T, h Harness) {
	st, _ := open(t, h)
	for _, name := range []string{"alice", "mary", "olga", "ivan"} {
		mustUser(t, st, name)
	}
	for _, name := range []string{"aIice", "aǀice", "ɑlice", "alıce", "Alice", "ALICE", "rnary", "0lga", "Ivan", "ｍａｒｙ"} {
		_, err := st.CreateUser(store.NewUser{Username: name, FirstName: "F", LastName: "L", PasswordHash: "h"})
		wantErr(t, err, store.ErrConflict)
		if err == nil || !strings.Contains(err.Error(), "looks like an existing account") && !strings.Contains(err.Error(), "already taken") {
			t.Errorf("%q: %v does not say it looks like an existing name", name, err)
		}
		wantErr(t, st.CheckUsernameFree(name, 0), store.ErrConflict)
	}
	bob := mustUser(t, st, "bob")
	for _, name := range []string{"aIice", "0lga"} {
		_, err := st.UpdateUser(bob.ID, store.UserUpdate{Username: ptr(name)})
		wantErr(t, err, store.ErrConflict)
	}
	// A name that only looks like the account's own is its owner's to take.
	if u, err := st.UpdateUser(bob.ID, store.UserUpdate{Username: ptr("Bob")}); err != nil || u.Username != "Bob" {
		t.Fatalf("bob → Bob: %+v, %v", u, err)
	}
	if _, err := st.UserByUsername("bob"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the old name still finds an account: %v", err)
	}
	// Not lookalikes: allowed.
	for _, name := range []string{"allce", "josé", "marya"} {
		mustUser(t, st, name)
	}
}

func testUsernamesNormalisedAndUnconfusable(t *testing.T, h Harness) {
	st, _ := open(t, h)
	u := mustUser(t, st, "ｃｏｃｏ") // fullwidth: stored as "coco"
	if u.Username != "coco" {
		t.Fatalf("stored as %q, want NFKC form", u.Username)
	}
	if got, err := st.UserByUsername("ｃｏｃｏ"); err != nil || got.ID != u.ID {
		t.Fatalf("lookup by the typed form: %+v, %v", got, err)
	}
	_, err := st.CreateUser(store.NewUser{Username: "сосо", FirstName: "F", LastName: "L", PasswordHash: "$argon2id$x"}) // Cyrillic
	wantErr(t, err, store.ErrConflict)
	wantErr(t, st.CheckUsernameFree("сосо", 0), store.ErrConflict)
	if err := st.CheckUsernameFree("coco", u.ID); err != nil {
		t.Errorf("own name for its own account: %v", err)
	}
	bob := mustUser(t, st, "bob")
	_, err = st.UpdateUser(bob.ID, store.UserUpdate{Username: ptr("сосо")})
	wantErr(t, err, store.ErrConflict)
	// IfUnchanged: a password change meanwhile refuses a rename checked before it.
	seen, _ := st.UserByID(bob.ID)
	if _, err := st.UpdateUser(bob.ID, store.UserUpdate{PasswordHash: ptr("$argon2id$other")}); err != nil {
		t.Fatal(err)
	}
	_, err = st.UpdateUser(bob.ID, store.UserUpdate{Username: ptr("robert"), IfUnchanged: &seen})
	wantErr(t, err, store.ErrConflict)
}

// tok turns a short name into a well-formed token (64 hex digits).
func tok(name string) string { return fmt.Sprintf("%064x", name) }

func testTokenDigestRejectsMalformed(t *testing.T, h Harness) {
	st, clock := open(t, h)
	u := mustUser(t, st, "ann")
	err := st.CreateToken(u.ID, store.TokenDigest("not hex"), clock.Now().Add(time.Hour))
	wantErr(t, err, store.ErrInvalid)
	if _, err := st.Authenticate(store.TokenDigest("also not hex")); !errors.Is(err, store.ErrUnauthenticated) {
		t.Fatalf("a malformed token authenticates: %v", err)
	}
	err = st.CreateToken(999, store.TokenDigest(tok("x")), clock.Now().Add(time.Hour))
	wantErr(t, err, store.ErrNotFound)
}

func testTokens(t *testing.T, h Harness) {
	st, clock := open(t, h)
	u := mustUser(t, st, "ann")
	d1, d2 := store.TokenDigest(tok("one")), store.TokenDigest(tok("two"))
	for _, d := range [][32]byte{d1, d2} {
		if err := st.CreateToken(u.ID, d, clock.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := st.Authenticate(d1); err != nil || got.ID != u.ID || got.Username != "ann" {
		t.Fatalf("Authenticate = %+v, %v", got, err)
	}
	_, err := st.Authenticate(store.TokenDigest(tok("other")))
	wantErr(t, err, store.ErrUnauthenticated)
	toks, err := st.ListTokens()
	if err != nil || len(toks) != 2 {
		t.Fatalf("ListTokens = %+v, %v", toks, err)
	}
	for _, tk := range toks {
		if tk.UserID != u.ID || len(tk.Prefix) != 12 || !tk.Created.Equal(clock.Now()) || !tk.Expiry.Equal(clock.Now().Add(time.Hour)) {
			t.Errorf("token %+v", tk)
		}
	}
	if toks[0].Prefix >= toks[1].Prefix {
		t.Errorf("tokens not in digest order: %s, %s", toks[0].Prefix, toks[1].Prefix)
	}
	if err := st.RevokeToken(d1); err != nil {
		t.Fatal(err)
	}
	if err := st.RevokeToken(d1); err != nil {
		t.Fatalf("revoking twice: %v", err)
	}
	_, err = st.Authenticate(d1)
	wantErr(t, err, store.ErrUnauthenticated)
	if _, err := st.Authenticate(d2); err != nil {
		t.Fatal("revoking one token revoked another")
	}
	clock.Advance(time.Hour)
	_, err = st.Authenticate(d2)
	wantErr(t, err, store.ErrUnauthenticated)
	if n, err := st.SweepExpiredTokens(); err != nil || n != 1 {
		t.Fatalf("sweep = %d, %v", n, err)
	}
	if toks, _ := st.ListTokens(); len(toks) != 0 {
		t.Fatalf("tokens left after sweep: %v", toks)
	}
}

func testRevokeUserTokensKeepsOne(t *testing.T, h Harness) {
	st, clock := open(t, h)
	a, b := mustUser(t, st, "a"), mustUser(t, st, "b")
	exp := clock.Now().Add(time.Hour)
	keep := store.TokenDigest(tok("keep"))
	for _, c := range []struct {
		user uint64
		name string
	}{{a.ID, "keep"}, {a.ID, "x"}, {a.ID, "y"}, {b.ID, "b"}, {b.ID, "b2"}} {
		if err := st.CreateToken(c.user, store.TokenDigest(tok(c.name)), exp); err != nil {
			t.Fatal(err)
		}
	}
	n, err := st.RevokeUserTokens(a.ID, keep[:])
	if err != nil || n != 2 {
		t.Fatalf("revoked %d, %v; want 2", n, err)
	}
	for name, want := range map[string]bool{"keep": true, "x": false, "y": false, "b": true, "b2": true} {
		_, err := st.Authenticate(store.TokenDigest(tok(name)))
		if (err == nil) != want {
			t.Errorf("token %s valid=%v, want %v", name, err == nil, want)
		}
	}
	// A password change revokes the others in the same transaction; nil keeps none.
	if _, err := st.UpdateUser(b.ID, store.UserUpdate{PasswordHash: ptr("new")}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"b", "b2"} {
		if _, err := st.Authenticate(store.TokenDigest(tok(name))); err == nil {
			t.Errorf("password change kept b's token %s", name)
		}
	}
	if got, _ := st.UserByID(b.ID); got.PasswordHash != "new" {
		t.Errorf("hash %q", got.PasswordHash)
	}
	if n, err := st.RevokeUserTokens(a.ID, nil); err != nil || n != 1 {
		t.Errorf("revoke all = %d, %v", n, err)
	}
}

func testWidgets(t *testing.T, h Harness) {
	st, _ := open(t, h)
	u := mustUser(t, st, "ann")
	if doc, err := st.Widgets(u.ID); err != nil || doc != nil {
		t.Fatalf("fresh widgets = %q, %v", doc, err)
	}
	doc := []byte("{ \"widgets\" : [\"a\", \"ß\"] }\n")
	if err := st.SaveWidgets(u.ID, doc); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.Widgets(u.ID); string(got) != string(doc) {
		t.Fatalf("got %q, want %q", got, doc)
	}
	if err := st.SaveWidgets(u.ID, []byte("[]")); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.Widgets(u.ID); string(got) != "[]" {
		t.Fatalf("overwrite: got %q", got)
	}
	for _, bad := range []string{"", "  ", "{", "[1,]", "{} {}"} {
		if err := st.SaveWidgets(u.ID, []byte(bad)); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("SaveWidgets(%q) = %v, want ErrInvalid", bad, err)
		}
	}
	if err := st.SaveWidgets(u.ID, make([]byte, store.MaxWidgetsBytes+1)); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("oversized widgets: %v", err)
	}
	wantErr(t, st.SaveWidgets(999, []byte("{}")), store.ErrNotFound)
}

func testStats(t *testing.T, h Harness) {
	st, _ := open(t, h)
	mustUser(t, st, "ann")
	s, err := st.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if s.SchemaVersion == 0 || s.FileBytes == 0 {
		t.Fatalf("stats %+v", s)
	}
	found := false
	for _, b := range s.Buckets {
		if b.Name == "users" && b.Keys == 1 {
			found = true
		}
	}
	if !found {
		t.Fatalf("users not counted: %+v", s.Buckets)
	}
}

// testPasswordHashKinds: the kinds of hash stored, each counted with an example;
// unusable and unreadable hashes left out.
func testPasswordHashKinds(t *testing.T, h Harness) {
	st, _ := open(t, h)
	const (
		own      = "$argon2id$v=19$m=47104,t=1,p=1$c2FsdHNhbHRzYWx0c2FsdA$a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2U"
		plantmap = "pbkdf2_sha256$320000$LuKlEyk1ZdbXx8ctkvF9c7$21bgLk3zi8fHBCZdTkAKQT8e0nIGe7A+gmS4zFaqzd4="
	)
	for i, hash := range []string{own, own, plantmap, "!", "!" + plantmap, "h"} {
		if _, err := st.CreateUser(store.NewUser{Username: fmt.Sprintf("u%d", i), FirstName: "F", LastName: "L", PasswordHash: hash}); err != nil {
			t.Fatal(err)
		}
	}
	kinds, err := st.PasswordHashKinds()
	if err != nil {
		t.Fatal(err)
	}
	if len(kinds) != 2 || kinds[0].Kind != "argon2id m=47104,t=1,p=1" || kinds[0].Accounts != 2 || kinds[0].Example != own ||
		kinds[1].Kind != "pbkdf2_sha256 iterations=320000" || kinds[1].Accounts != 1 || kinds[1].Example != plantmap {
		t.Fatalf("PasswordHashKinds = %+v", kinds)
	}
}

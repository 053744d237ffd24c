package store_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gardend/gardend/store"
)

// testClock is a settable clock so expiry is tested without sleeping.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// mustOpen is mustOpenStore with a settable clock.
func mustOpen(t testing.TB) (*store.Store, *testClock) {
	t.Helper()
	clock := &testClock{t: time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)}
	return openStore(t, store.Options{Now: clock.Now}), clock
}

func newUser(t testing.TB, st *store.Store, name string) store.User {
	t.Helper()
	u, err := st.CreateUser(store.NewUser{Username: name, FirstName: "F", LastName: "L", PasswordHash: "h"})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestCreateUser(t *testing.T) {
	st, _ := mustOpen(t)
	u := newUser(t, st, "ann")
	if u.ID != 1 || u.DateJoined.IsZero() || u.LastLogin != nil {
		t.Fatalf("unexpected user %+v", u)
	}
	if _, err := st.CreateUser(store.NewUser{Username: "ann", FirstName: "A", LastName: "B", PasswordHash: "x"}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("duplicate: got %v, want ErrConflict", err)
	}
	// Usernames compare case-sensitively, as the service being replaced did.
	if _, err := st.CreateUser(store.NewUser{Username: "Ann", FirstName: "A", LastName: "B", PasswordHash: "x"}); err != nil {
		t.Fatalf("Ann: %v", err)
	}
	got, err := st.UserByUsername("ann")
	if err != nil || got.ID != u.ID || got.PasswordHash != "h" {
		t.Fatalf("UserByUsername = %+v, %v", got, err)
	}
	if _, err := st.UserByUsername("nobody"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing user: %v", err)
	}
}

func TestCreateUserValidation(t *testing.T) {
	st, _ := mustOpen(t)
	cases := []struct {
		name  string
		in    store.NewUser
		field string
	}{
		{"empty username", store.NewUser{FirstName: "a", LastName: "b", PasswordHash: "h"}, "username"},
		{"bad char", store.NewUser{Username: "a b", FirstName: "a", LastName: "b", PasswordHash: "h"}, "username"},
		{"long username", store.NewUser{Username: string(make([]byte, 151)), FirstName: "a", LastName: "b", PasswordHash: "h"}, "username"},
		{"blank first", store.NewUser{Username: "a", FirstName: " ", LastName: "b", PasswordHash: "h"}, "first_name"},
		{"no last", store.NewUser{Username: "a", FirstName: "a", PasswordHash: "h"}, "last_name"},
		{"bad email", store.NewUser{Username: "a", FirstName: "a", LastName: "b", Email: "nope", PasswordHash: "h"}, "email"},
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
}

func TestValidatePassword(t *testing.T) {
	for pw, ok := range map[string]bool{
		"short":                   false,
		"12345678901":             false,
		"alice-garden":            true,
		"alicealice":              false, // equals the username below
		string(make([]byte, 257)): false,
	} {
		if got := store.ValidatePassword(pw, "alicealice") == ""; got != ok {
			t.Errorf("ValidatePassword(%.12q) ok=%v, want %v", pw, got, ok)
		}
	}
}

func TestUpdateUser(t *testing.T) {
	st, _ := mustOpen(t)
	a, b := newUser(t, st, "a"), newUser(t, st, "b")
	taken := "b"
	if _, err := st.UpdateUser(a.ID, store.UserUpdate{Username: &taken}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("rename onto b: %v", err)
	}
	newName, email := "alice", "alice@example.org"
	u, err := st.UpdateUser(a.ID, store.UserUpdate{Username: &newName, Email: &email})
	if err != nil || u.Username != "alice" || u.Email != email {
		t.Fatalf("update = %+v, %v", u, err)
	}
	if _, err := st.UserByUsername("a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatal("old username still resolves")
	}
	// The old name is free again.
	if _, err := st.UpdateUser(b.ID, store.UserUpdate{Username: ptr("a")}); err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }

// tok turns a short name into a well-formed token (64 hex digits).
func tok(name string) string { return fmt.Sprintf("%064x", name) }

func TestTokenDigestRejectsMalformed(t *testing.T) {
	st, clock := mustOpen(t)
	u := newUser(t, st, "ann")
	if err := st.CreateToken(u.ID, store.TokenDigest("not hex"), clock.Now().Add(time.Hour)); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("storing the malformed-token digest: %v", err)
	}
	valid := tok("x")
	for _, bad := range []string{"", "zz", valid[:63], valid + "0", strings.Repeat("g", 64)} {
		if store.TokenDigest(bad) != store.TokenDigest("") {
			t.Errorf("malformed %q has a digest of its own", bad)
		}
	}
	if store.TokenDigest(valid) == store.TokenDigest("") {
		t.Fatal("a valid token maps to the malformed digest")
	}
}

func TestTokens(t *testing.T) {
	st, clock := mustOpen(t)
	u := newUser(t, st, "ann")
	d1, d2 := store.TokenDigest(tok("one")), store.TokenDigest(tok("two"))
	for _, d := range [][32]byte{d1, d2} {
		if err := st.CreateToken(u.ID, d, clock.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := st.Authenticate(d1); err != nil || got.ID != u.ID {
		t.Fatalf("Authenticate = %+v, %v", got, err)
	}
	if _, err := st.Authenticate(store.TokenDigest(tok("other"))); !errors.Is(err, store.ErrUnauthenticated) {
		t.Fatalf("unknown token: %v", err)
	}
	if err := st.RevokeToken(d1); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Authenticate(d1); !errors.Is(err, store.ErrUnauthenticated) {
		t.Fatal("revoked token still works")
	}
	if _, err := st.Authenticate(d2); err != nil {
		t.Fatal("revoking one token revoked another")
	}
	clock.Advance(time.Hour)
	if _, err := st.Authenticate(d2); !errors.Is(err, store.ErrUnauthenticated) {
		t.Fatal("token works at its expiry instant")
	}
	if n, err := st.SweepExpiredTokens(); err != nil || n != 1 {
		t.Fatalf("sweep = %d, %v", n, err)
	}
	if toks, _ := st.ListTokens(); len(toks) != 0 {
		t.Fatalf("tokens left after sweep: %v", toks)
	}
}

func TestRevokeUserTokensKeepsOne(t *testing.T) {
	st, clock := mustOpen(t)
	a, b := newUser(t, st, "a"), newUser(t, st, "b")
	exp := clock.Now().Add(time.Hour)
	keep := store.TokenDigest(tok("keep"))
	st.CreateToken(a.ID, keep, exp)
	st.CreateToken(a.ID, store.TokenDigest(tok("x")), exp)
	st.CreateToken(a.ID, store.TokenDigest(tok("y")), exp)
	st.CreateToken(b.ID, store.TokenDigest(tok("b")), exp)
	n, err := st.RevokeUserTokens(a.ID, keep[:])
	if err != nil || n != 2 {
		t.Fatalf("revoked %d, %v; want 2", n, err)
	}
	for name, want := range map[string]bool{"keep": true, "x": false, "y": false, "b": true} {
		_, err := st.Authenticate(store.TokenDigest(tok(name)))
		if (err == nil) != want {
			t.Errorf("token %s valid=%v, want %v", name, err == nil, want)
		}
	}
	// A password change revokes the others in the same transaction.
	hash := "new"
	if _, err := st.UpdateUser(b.ID, store.UserUpdate{PasswordHash: &hash}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Authenticate(store.TokenDigest(tok("b"))); err == nil {
		t.Fatal("password change kept b's token")
	}
}

func TestWidgetsByteForByte(t *testing.T) {
	st, _ := mustOpen(t)
	u := newUser(t, st, "ann")
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
	for _, bad := range []string{"", "  ", "{", "[1,]", "{} {}", "\"\xff\"", "{\"a\":\"\xc3\"}", "\"\xed\xa0\x80\""} {
		if err := st.SaveWidgets(u.ID, []byte(bad)); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("SaveWidgets(%q) = %v, want ErrInvalid", bad, err)
		}
	}
	if err := st.SaveWidgets(u.ID, make([]byte, store.MaxWidgetsBytes+1)); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("oversized widgets: %v", err)
	}
}

func TestOpenLockedFailsFast(t *testing.T) {
	path := filepath.Join(t.TempDir(), store.FileName)
	first, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	start := time.Now()
	_, err = store.Open(path, store.Options{Timeout: 200 * time.Millisecond})
	if !errors.Is(err, store.ErrLocked) {
		t.Fatalf("second open: %v, want ErrLocked", err)
	}
	if waited := time.Since(start); waited > 2*time.Second {
		t.Fatalf("second open took %v", waited)
	}
}

func TestStatsAndSchema(t *testing.T) {
	st, _ := mustOpen(t)
	newUser(t, st, "ann")
	s, err := st.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if s.SchemaVersion != store.SchemaVersion() || s.FileBytes == 0 {
		t.Fatalf("stats %+v", s)
	}
	found := false
	for _, b := range s.Buckets {
		if b.Name == "users" && b.Keys == 1 {
			found = true
		}
	}
	if !found {
		t.Fatalf("users bucket not counted: %+v", s.Buckets)
	}
}

func TestReopenKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), store.FileName)
	st, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	newUser(t, st, "ann")
	st.Close()
	st, err = store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.UserByUsername("ann"); err != nil {
		t.Fatal(err)
	}
}

func TestDataIDIsMadeOnceAndKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), store.FileName)
	st, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	id, created, err := st.DataID()
	if err != nil || !created || len(id) != 32 {
		t.Fatalf("first: %q %v %v", id, created, err)
	}
	again, created, err := st.DataID()
	if err != nil || created || again != id {
		t.Fatalf("second: %q %v %v", again, created, err)
	}
	st.Close()
	st, err = store.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if reopened, created, err := st.DataID(); err != nil || created || reopened != id {
		t.Fatalf("reopened: %q %v %v", reopened, created, err)
	}
}

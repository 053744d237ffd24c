package cli_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/store"
)

var fieldArgon2 = store.Argon2Params{Time: 1, Memory: 64, Threads: 1, KeyLen: 32}

// fieldUserArgs are the flags of a valid `user create`.
func fieldUserArgs(dir, username string) []string {
	return []string{"user", "create", "--data", dir, "--username", username, "--password-stdin",
		"--first-name", "Bob", "--last-name", "Gardener", "--email", "bob@example.org"}
}

func TestUserCreateWithoutServer(t *testing.T) {
	dir := t.TempDir()
	out, err := fieldExecute(t, context.Background(), "s3cret-garden\n", fieldUserArgs(dir, "bob")...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `created user "bob"`) {
		t.Fatalf("output %q", out)
	}

	// The account works over HTTP, and is no site administrator.
	srv, err := newServerIn(server.Config{DataDir: dir, Argon2: fieldArgon2, Logger: zerolog.Nop(), Registration: server.RegistrationClosed})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	status, res := fieldPost(t, ts.URL+"/login", map[string]string{"username": "bob", "password": "s3cret-garden"})
	if status != http.StatusOK || res["token"] == nil {
		t.Fatalf("login: %d %v", status, res)
	}
	u, err := srv.Store().UserByUsername("bob")
	if err != nil || u.SiteAdmin || u.Email != "bob@example.org" || u.FirstName != "Bob" {
		t.Fatalf("stored user %+v, %v", u, err)
	}
}

// With serve running, the command goes through the admin socket.
func TestUserCreateThroughRunningServer(t *testing.T) {
	dir := t.TempDir()
	srv, err := newServerIn(server.Config{DataDir: dir, Addr: "127.0.0.1:0", AdminSocket: true, Argon2: fieldArgon2, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	<-srv.Ready()

	if _, err := fieldExecute(t, ctx, "s3cret-garden\n", fieldUserArgs(dir, "bob")...); err != nil {
		t.Fatal(err)
	}
	status, res := fieldPost(t, "http://"+srv.Addr()+"/login", map[string]string{"username": "bob", "password": "s3cret-garden"})
	if status != http.StatusOK || res["token"] == nil {
		t.Fatalf("login: %d %v", status, res)
	}
	// A second create of the same name is refused with the server's reason.
	_, err = fieldExecute(t, ctx, "s3cret-garden\n", fieldUserArgs(dir, "bob")...)
	if err == nil || !strings.Contains(err.Error(), "already taken") {
		t.Fatalf("duplicate: %v", err)
	}
}

func TestUserCreateErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, stdin string
		args        []string
		want        string
	}{
		{"no first name", "s3cret-garden\n", []string{"user", "create", "--data", dir, "--username", "bob", "--last-name", "G", "--password-stdin"}, "--first-name: must not be empty"},
		{"no last name", "s3cret-garden\n", []string{"user", "create", "--data", dir, "--username", "bob", "--first-name", "B", "--password-stdin"}, "--last-name: must not be empty"},
		{"bad email", "s3cret-garden\n", append(fieldUserArgs(dir, "bob"), "--email", "bob"), "--email: "},
		{"bad username", "s3cret-garden\n", fieldUserArgs(dir, "bob smith"), "--username: "},
		{"no username", "s3cret-garden\n", []string{"user", "create", "--data", dir}, `"username" not set`},
		{"empty stdin", "", fieldUserArgs(dir, "bob"), "standard input is empty"},
		{"weak password", "12345678\n", fieldUserArgs(dir, "bob"), "entirely numeric"},
		{"no terminal", "", []string{"user", "create", "--data", dir, "--username", "bob", "--first-name", "B", "--last-name", "G"}, "--password-stdin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := fieldExecute(t, context.Background(), tc.stdin, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

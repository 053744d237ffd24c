package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/gardend/gardend/cli"
	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/store"
)

// run executes the CLI with args and stdin, returning stdout and the error.
func run(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := cli.NewRootCommand()
	var out, errOut bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

// serve runs a server with the admin socket on dir until the test ends.
func serve(t *testing.T, dir string) string {
	t.Helper()
	return serveConfig(t, server.Config{DataDir: dir})
}

// serveConfig runs a server with cfg (on 127.0.0.1:0, with the admin socket and
// cheap hashing) until the test ends, and returns its base URL.
func serveConfig(t *testing.T, cfg server.Config) string {
	t.Helper()
	return serveConfigOn(t, cfg, "")
}

// serveConfigOn is serveConfig on the PostgreSQL database dsn ("" for bbolt).
func serveConfigOn(t *testing.T, cfg server.Config, dsn string) string {
	t.Helper()
	cfg.Addr, cfg.AdminSocket = "127.0.0.1:0", true
	cfg.Argon2 = store.Argon2Params{Time: 1, Memory: 64, Threads: 1, KeyLen: 32}
	srv, err := newServerOn(cfg, dsn)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	<-srv.Ready()
	t.Cleanup(func() {
		cancel()
		<-done
		srv.Close()
	})
	return "http://" + srv.Addr()
}

func login(t *testing.T, base, username, password string) (int, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"username": username, "password": password})
	res, err := http.Post(base+"/login", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var v struct {
		Token string `json:"token"`
	}
	json.NewDecoder(res.Body).Decode(&v)
	return res.StatusCode, v.Token
}

func TestAdminCreateThenLoginOverHTTP(t *testing.T) {
	for _, running := range []bool{false, true} {
		name := map[bool]string{false: "server stopped", true: "through the admin socket"}[running]
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			var base string
			if running {
				base = serve(t, dir)
			}
			out, err := run(t, "garden-admin-pw\n", "admin", "create", "--data", dir, "--username", "root", "--password-stdin", "--first-name", "Rita")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, `created site administrator "root"`) {
				t.Fatalf("output %q", out)
			}
			if !running {
				base = serve(t, dir)
			}
			code, token := login(t, base, "root", "garden-admin-pw")
			if code != http.StatusOK || token == "" {
				t.Fatalf("login: %d", code)
			}
			req, _ := http.NewRequest("GET", base+"/user", nil)
			req.Header.Set("Authorization", "Token "+token)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var u store.User
			json.NewDecoder(res.Body).Decode(&u)
			res.Body.Close()
			if !u.SiteAdmin || u.FirstName != "Rita" {
				t.Fatalf("user %+v", u)
			}
			// Duplicates are refused with the reason.
			if _, err := run(t, "garden-admin-pw\n", "admin", "create", "--data", dir, "--username", "root", "--password-stdin"); err == nil || !strings.Contains(err.Error(), "already taken") {
				t.Fatalf("duplicate admin: %v", err)
			}
		})
	}
}

func TestAdminCreateRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		stdin string
		args  []string
		want  string
	}{
		{"pw\n", []string{"--username", "root", "--password-stdin"}, "at least 8"},
		{"", []string{"--username", "root", "--password-stdin"}, "standard input is empty"},
		{"garden-pw-1\n", []string{"--username", "bad name", "--password-stdin"}, "--username"},
		{"garden-pw-1\n", []string{"--password-stdin"}, "username"},
		{"", []string{"--username", "root"}, "--password-stdin"},
	}
	for _, tc := range cases {
		args := append([]string{"admin", "create", "--data", dir}, tc.args...)
		_, err := run(t, tc.stdin, args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want it to mention %q", tc.args, err, tc.want)
		}
	}
}

func TestInspect(t *testing.T) {
	dir := t.TempDir()
	if _, err := run(t, "", "inspect", "users", "--data", dir); err == nil || !strings.Contains(err.Error(), "no gardend database") {
		t.Fatalf("inspect of an empty dir: %v", err)
	}
	if _, err := run(t, "garden-admin-pw\n", "admin", "create", "--data", dir, "--username", "root", "--password-stdin"); err != nil {
		t.Fatal(err)
	}
	base := serve(t, dir)
	login(t, base, "root", "garden-admin-pw")

	out, err := run(t, "", "inspect", "users", "--data", dir)
	if err != nil || !strings.Contains(out, "USERNAME") || !strings.Contains(out, "root") {
		t.Fatalf("inspect users: %v\n%s", err, out)
	}
	out, err = run(t, "", "inspect", "tokens", "--data", dir, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var toks []store.Token
	if err := json.Unmarshal([]byte(out), &toks); err != nil || len(toks) != 1 || toks[0].UserID != 1 {
		t.Fatalf("tokens JSON %q: %v", out, err)
	}
	out, err = run(t, "", "inspect", "stats", "--data", dir)
	if err != nil || !strings.Contains(out, "schema version") {
		t.Fatalf("stats: %v %s", err, out)
	}
}

func TestEnvironmentBindsFlags(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("GARDEND_DATA", dir)
	if _, err := run(t, "garden-admin-pw\n", "admin", "create", "--username", "envroot", "--password-stdin"); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "", "inspect", "users")
	if err != nil || !strings.Contains(out, "envroot") {
		t.Fatalf("GARDEND_DATA not honoured: %v %s", err, out)
	}
	t.Setenv("GARDEND_TOKEN_TTL", "soon")
	if _, err := run(t, "", "serve"); err == nil || !strings.Contains(err.Error(), "GARDEND_TOKEN_TTL") {
		t.Fatalf("bad env value: %v", err)
	}
	if cli.EnvName("token-ttl") != "GARDEND_TOKEN_TTL" {
		t.Fatal(cli.EnvName("token-ttl"))
	}
}

func TestServeRejectsBadFlags(t *testing.T) {
	for args, want := range map[string]string{
		"--log-format xml":   "--log-format",
		"--log-level chatty": "--log-level",
	} {
		_, err := run(t, "", append([]string{"serve", "--data", t.TempDir()}, strings.Fields(args)...)...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", args, err)
		}
	}
}

func TestVersion(t *testing.T) {
	out, err := run(t, "", "version")
	if err != nil || !strings.HasPrefix(out, "gardend ") || !strings.Contains(out, "go1.") {
		t.Fatalf("version: %v %q", err, out)
	}
	flag, err := run(t, "", "--version")
	if err != nil || flag != out {
		t.Fatalf("--version: %v %q, want %q", err, flag, out)
	}
}

// newServerIn is server.New on cfg with the database gardend serve opens for its data
// directory (cli.OpenStore: refused while a restore is pending there).
func newServerIn(cfg server.Config) (*server.Server, error) {
	return newServerOn(cfg, "")
}

// newServerOn is newServerIn on the PostgreSQL database dsn ("" for bbolt).
func newServerOn(cfg server.Config, dsn string) (*server.Server, error) {
	st, created, err := cli.OpenStore(context.Background(), cfg.DataDir, dsn, cfg.Now)
	if err != nil {
		return nil, err
	}
	cfg.Store, cfg.StoreCreated = st, created
	return server.New(cfg)
}

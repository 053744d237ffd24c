package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gardend/gardend/cli"
	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/bolt"
)

func gardend(t *testing.T, args ...string) string {
	t.Helper()
	cmd := cli.NewRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("gardend %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// seed creates a user, a company and a garden in a fresh data directory.
func seed(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	st, err := bolt.Open(filepath.Join(dir, bolt.FileName), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	u, err := st.CreateUser(store.NewUser{Username: "alice", FirstName: "A", LastName: "L", PasswordHash: "x"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := st.CreateCompany(u.ID, "Green Roofs")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateGarden(c.ID, "Roof A"); err != nil {
		t.Fatal(err)
	}
	return dir
}

// exercise adds and removes a bed and inspects companies, gardens and permissions.
func exercise(t *testing.T, dir string) {
	t.Helper()
	out := gardend(t, "--data", dir, "beds", "add", "--garden", "1", "--uuid", "3fa85f64-5717-4562-b3fc-2c963f66afa6", "--name", "north")
	if out != "added bed 1 (project 3fa85f64-5717-4562-b3fc-2c963f66afa6) to garden 1\n" {
		t.Errorf("beds add: %q", out)
	}
	if out := gardend(t, "--data", dir, "inspect", "companies"); !strings.Contains(out, "1   Green Roofs") {
		t.Errorf("inspect companies:\n%s", out)
	}
	var gardens []store.Garden
	if err := json.Unmarshal([]byte(gardend(t, "--data", dir, "inspect", "gardens", "--json")), &gardens); err != nil || len(gardens) != 1 || gardens[0].Name != "Roof A" {
		t.Errorf("inspect gardens --json: %+v, %v", gardens, err)
	}
	if out := gardend(t, "--data", dir, "inspect", "permissions"); !strings.Contains(out, "company 1") || !strings.Contains(out, "alice") {
		t.Errorf("inspect permissions:\n%s", out)
	}
	if out := gardend(t, "--data", dir, "beds", "remove", "--garden", "1", "--bed", "1"); out != "removed bed 1 of garden 1\n" {
		t.Errorf("beds remove: %q", out)
	}
	cmd := cli.NewRootCommand()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"--data", dir, "beds", "remove", "--garden", "1", "--bed", "1"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("removing a removed bed: %v", err)
	}
	// A name that is not UTF-8 is the same error whether serve runs or not (through
	// the socket it became U+FFFD and was stored).
	cmd = cli.NewRootCommand()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"--data", dir, "beds", "add", "--garden", "1", "--uuid", "3fa85f64-5717-4562-b3fc-2c963f66afa6", "--name", "\xff"})
	if err := cmd.Execute(); err == nil || err.Error() != "name: name must be UTF-8 text (invalid byte 0xFF at character 1)" {
		t.Errorf("beds add --name $'\\xff': %v", err)
	}
}

func TestBedsAndInspectWithoutServer(t *testing.T) {
	exercise(t, seed(t))
}

// TestBedsAndInspectThroughSocket runs the same commands while serve holds the
// database, so they must go through the admin socket.
func TestBedsAndInspectThroughSocket(t *testing.T) {
	dir := seed(t)
	srv, err := newServerIn(server.Config{DataDir: dir, Addr: "127.0.0.1:0", AdminSocket: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	<-srv.Ready()
	exercise(t, dir)
	cancel()
	if err := <-done; err != nil {
		t.Error(err)
	}
}

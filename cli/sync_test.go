package cli_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"

	"github.com/gardend/gardend/cli"
	"github.com/gardend/gardend/server/sitesync"
	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/postgres/pgtest"
)

// TestSiteAndSyncCommands: site add writes a credentials file the box can read and
// refuses bad names and taken ones; site list and remove; sync hub-config prints a
// configuration nats-server accepts, with the same keys every time and a removed
// site's user revoked.
func TestSiteAndSyncCommands(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	dir := t.TempDir()
	data := t.TempDir()
	file := filepath.Join(dir, "farm-a.creds")
	out, err := run(t, "", "site", "add", "farm-a", "--store", dsn, "--data", data, "--out", file)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	wantLines(t, out, "site farm-a is number 2; its credentials are in "+file)
	creds, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Errorf("credentials file mode %v", fi.Mode().Perm())
	}
	if id, err := sitesync.ParseSiteCreds(creds); err != nil || id.Number != 2 || id.Name != "farm-a" {
		t.Errorf("ParseSiteCreds = %+v, %v", id, err)
	}
	for _, tc := range []struct{ name, want string }{
		{"farm-a", "exists"}, {"office", "site name"}, {"Farm_A", "site name"}, {"", "site name"},
	} {
		if _, err := run(t, "", "site", "add", tc.name, "--store", dsn, "--data", data, "--out", filepath.Join(dir, "x"+tc.name)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("site add %q: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
	if _, err := run(t, "", "site", "add", "farm-b", "--store", dsn, "--data", data, "--out", file); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("site add over an existing file: %v", err)
	}
	if _, err := run(t, "", "site", "add", "farm-b", "--data", data); err == nil || !strings.Contains(err.Error(), "PostgreSQL") {
		t.Errorf("site add on a box's store: %v", err)
	}
	if out, err := run(t, "", "site", "add", "farm-b", "--store", dsn, "--data", data, "--out", filepath.Join(dir, "b.creds")); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	conf := func() string {
		t.Helper()
		out, err := run(t, "", "sync", "hub-config", "--store", dsn, "--data", data, "--leaf-advertise", "hub.example.org:7422",
			"--store-dir", filepath.Join(dir, "js"), "--resolver-dir", filepath.Join(dir, "jwt"))
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return out
	}
	first := conf()
	for _, want := range []string{`advertise: "hub.example.org:7422"`, `domain: "hub"`, "resolver:", "operator:", `listen: "0.0.0.0:7422"`} {
		if !strings.Contains(first, want) {
			t.Errorf("hub config lacks %s:\n%s", want, first)
		}
	}
	path := filepath.Join(dir, "hub.conf")
	if err := os.WriteFile(path, []byte(first), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatalf("nats-server refuses the configuration: %v", err)
	}
	if opts.LeafNode.Advertise != "hub.example.org:7422" || opts.JetStreamDomain != "hub" || len(opts.TrustedOperators) != 1 {
		t.Errorf("hub options: %+v", opts)
	}
	operator := opts.TrustedOperators[0].Subject
	if _, err := run(t, "", "site", "remove", "farm-b", "--store", dsn, "--data", data); err != nil {
		t.Fatal(err)
	}
	second := conf()
	if err := os.WriteFile(path, []byte(second), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err = server.ProcessConfigFile(path)
	if err != nil || opts.TrustedOperators[0].Subject != operator {
		t.Fatalf("a second hub-config has other keys (%v)", err)
	}
	bcreds, _ := os.ReadFile(filepath.Join(dir, "b.creds"))
	userJWT, _ := jwt.ParseDecoratedJWT(bcreds)
	uc, _ := jwt.DecodeUserClaims(userJWT)
	revoked := false
	for _, token := range regexp.MustCompile(`"(eyJ[A-Za-z0-9_.-]+)"`).FindAllStringSubmatch(second, -1) {
		if ac, err := jwt.DecodeAccountClaims(token[1]); err == nil && ac.Name == sitesync.AccountName {
			revoked = ac.IsClaimRevoked(uc)
		}
	}
	if !revoked {
		t.Error("the removed site's credentials are not revoked in the hub's configuration")
	}

	out, err = run(t, "", "site", "list", "--json", "--store", dsn, "--data", data)
	if err != nil {
		t.Fatal(err)
	}
	var sites []map[string]any
	if err := json.Unmarshal([]byte(out), &sites); err != nil || len(sites) != 2 || sites[0]["name"] != "farm-a" || sites[1]["removed"] != true {
		t.Errorf("site list --json: %v\n%s", err, out)
	}
	for _, key := range []string{"number", "last_contact", "backlog_records", "backlog_bytes"} {
		if _, ok := sites[0][key]; !ok {
			t.Errorf("site list --json lacks %q", key)
		}
	}
	out, err = run(t, "", "sync", "status", "--json", "--store", dsn, "--data", data)
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"connected", "last_contact", "backlog_records", "backlog_bytes", "oldest_unsent", "sites"} {
		if _, ok := st[key]; !ok {
			t.Errorf("sync status --json lacks %q:\n%s", key, out)
		}
	}
	// No server runs: it says the figures are the database's, not a live sync's.
	if st["live"] != false {
		t.Errorf("sync status --json without a server: live %v", st["live"])
	}
	out, err = run(t, "", "sync", "status", "--store", dsn, "--data", data)
	if err != nil || !strings.Contains(out, "no sync runs here") {
		t.Errorf("sync status without a server:\n%s\n%v", out, err)
	}
}

// cliOpenStore opens a stopped box's database as the CLI does.
func cliOpenStore(dir string) (store.Backend, bool, error) {
	return cli.OpenStore(context.Background(), dir, "", nil)
}

package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/server/backup"
	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/bolt"
)

// siteAdmin creates a site administrator directly in the store and logs it in.
func (h *harness) siteAdmin(username, password string) string {
	h.t.Helper()
	hash, err := store.NewPasswords(cheapArgon2, 1).Hash(context.Background(), password)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.srv.Store().CreateUser(store.NewUser{Username: username, FirstName: "S", LastName: "A", PasswordHash: hash, SiteAdmin: true}); err != nil {
		h.t.Fatal(err)
	}
	return h.login(username, password).expect(http.StatusOK).json()["token"].(string)
}

func TestAdminBackupEndpoint(t *testing.T) {
	var dataDir string
	h := newHarness(t, func(c *server.Config) { dataDir = c.DataDir })
	png := []byte("\x89PNG\r\n\x1a\n stand-in")
	if err := os.MkdirAll(filepath.Join(dataDir, "images"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dataDir, "images", "abc.png"), png, 0o600)
	userToken := h.register("gardener")
	h.do("POST", "/user/widgets", userToken, `{"w": [1, 2]}`).expect(http.StatusCreated)
	adminToken := h.siteAdmin("root", "root-password-1")

	h.do("GET", "/admin/backup", "", nil).expectProblem(http.StatusUnauthorized, "")
	h.do("GET", "/admin/backup", userToken, nil).expectProblem(http.StatusForbidden, "")

	res := h.do("GET", "/admin/backup", adminToken, nil).expect(http.StatusOK)
	if ct := res.Header().Get("Content-Type"); ct != "application/x-tar" {
		t.Fatalf("Content-Type %q", ct)
	}
	cd := res.Header().Get("Content-Disposition")
	if !regexp.MustCompile(`^attachment; filename="gardend-20261122T080000Z\.tar"$`).MatchString(cd) {
		t.Fatalf("Content-Disposition %q", cd)
	}
	body := res.Body.Bytes()
	m, err := backup.Verify(bytes.NewReader(body), backup.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// .gardend-id travels with the files it claims for the database.
	if len(m.Entries) != 3 || m.Entries[1].Path != server.DataIDFile || m.Entries[2].Path != "images/abc.png" || m.SchemaVersion != bolt.SchemaVersion() {
		t.Fatalf("manifest %+v", m)
	}

	// The body restores into a directory a new server then serves.
	target := filepath.Join(t.TempDir(), "restored")
	_, err = backup.Restore(bytes.NewReader(body), target, backup.RestoreOptions{
		CheckDB: func(path string, _ *backup.Manifest) error {
			st, err := bolt.Open(path, bolt.Options{ReadOnly: true})
			if err != nil {
				return err
			}
			defer st.Close()
			return st.Check()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(target, "images", "abc.png")); !bytes.Equal(got, png) {
		t.Fatal("image differs after restore")
	}
	h2 := newHarness(t, func(c *server.Config) { c.DataDir = target })
	tok := h2.login("gardener", "pw-gardener-123").expect(http.StatusOK).json()["token"].(string)
	if got := h2.do("GET", "/user/widgets", tok, nil).expect(http.StatusOK).Body.String(); got != `{"w": [1, 2]}` {
		t.Fatalf("widgets after restore %q", got)
	}
	h2.do("GET", "/admin/backup", adminToken, nil).expect(http.StatusOK) // tokens came along
}

// The archive also streams whole through a real listener (chunked, write deadline
// lifted), not only into a recorder.
func TestAdminBackupOverTheNetwork(t *testing.T) {
	dir := t.TempDir()
	srv, base, _ := runServer(t, server.Config{DataDir: dir})
	hash, _ := store.NewPasswords(cheapArgon2, 1).Hash(context.Background(), "root-password-1")
	if _, err := srv.Store().CreateUser(store.NewUser{Username: "root", FirstName: "S", LastName: "A", PasswordHash: hash, SiteAdmin: true}); err != nil {
		t.Fatal(err)
	}
	res, err := http.Post(base+"/login", "application/json", strings.NewReader(`{"username":"root","password":"root-password-1"}`))
	if err != nil {
		t.Fatal(err)
	}
	var tok struct{ Token string }
	err = json.NewDecoder(res.Body).Decode(&tok)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", base+"/admin/backup", nil)
	req.Header.Set("Authorization", "Token "+tok.Token)
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	if _, err := backup.Verify(res.Body, backup.ReadOptions{}); err != nil {
		t.Fatal(err)
	}
}

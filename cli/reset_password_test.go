package cli_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/store/bolt"
)

// getUser answers GET /user with token.
func getUser(t *testing.T, base, token string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/user", nil)
	req.Header.Set("Authorization", "Token "+token)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// An account imported without a usable password (its hash too costly to check) is
// counted in the import's report, and gets one from `user reset-password`, directly
// on the database while serve is stopped, found through any spelling of its name.
func TestUserResetPasswordAfterImport(t *testing.T) {
	dir := t.TempDir()
	dump := filepath.Join(t.TempDir(), "plantmap.json")
	const costly = "pbkdf2_sha1$10000000$KQ8zeK6wKRuR$tSJh4xdxfMJotlxfkCGjTFpGYZU="
	if err := os.WriteFile(dump, []byte(`[{"model": "auth.user", "pk": 1, "fields": {"username": "slow", "password": "`+costly+`",
		"date_joined": "2021-05-06T07:08:09Z"}}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "", "import", "plantmap", dump, "--data", dir)
	if err != nil || !strings.Contains(out, "1 account(s) without a usable password: their PlantMap hash costs more than 10 logins to check; set a password with gardend user reset-password NAME: slow") {
		t.Fatalf("import: %v\n%s", err, out)
	}
	st, err := bolt.Open(filepath.Join(dir, bolt.FileName), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	u, err := st.UserByUsername("slow")
	st.Close()
	if err != nil || u.PasswordHash != "!"+costly {
		t.Fatalf("imported hash %q, %v", u.PasswordHash, err)
	}
	out, err = run(t, "new-garden-pass\n", "user", "reset-password", "ｓｌｏｗ", "--data", dir, "--password-stdin")
	if err != nil || !strings.Contains(out, `password of "slow" (id 1) set`) {
		t.Fatalf("reset: %q, %v", out, err)
	}
	base := serve(t, dir)
	if status, res := fieldPost(t, base+"/login", map[string]string{"username": "slow", "password": "new-garden-pass"}); status != http.StatusOK {
		t.Fatalf("login with the new password: %d %v", status, res)
	}
}

// With serve running it goes through the admin socket, and ends every session of the
// account.
func TestUserResetPasswordThroughRunningServer(t *testing.T) {
	dir := t.TempDir()
	base := serve(t, dir)
	for _, name := range []string{"bob", "bobbobbob"} {
		if _, err := run(t, "old-garden-pass\n", fieldUserArgs(dir, name)...); err != nil {
			t.Fatal(err)
		}
	}
	status, res := fieldPost(t, base+"/login", map[string]string{"username": "bob", "password": "old-garden-pass"})
	if status != http.StatusOK {
		t.Fatalf("login: %d %v", status, res)
	}
	token := res["token"].(string)
	if out, err := run(t, "new-garden-pass\n", "user", "reset-password", "bob", "--data", dir, "--password-stdin"); err != nil {
		t.Fatalf("reset: %q, %v", out, err)
	}
	if code := getUser(t, base, token); code != http.StatusUnauthorized {
		t.Errorf("the old session after the reset: %d", code)
	}
	if status, _ := fieldPost(t, base+"/login", map[string]string{"username": "bob", "password": "old-garden-pass"}); status != http.StatusBadRequest {
		t.Errorf("old password: %d", status)
	}
	if status, _ := fieldPost(t, base+"/login", map[string]string{"username": "bob", "password": "new-garden-pass"}); status != http.StatusOK {
		t.Errorf("new password: %d", status)
	}
	for _, tc := range []struct {
		name, stdin, want string
		args              []string
	}{
		{"unknown user", "new-garden-pass\n", "not found", []string{"nobody"}},
		{"short password", "short\n", "at least 8 characters", []string{"bob"}},
		{"password is the name", "bobbobbob\n", "must not equal the username", []string{"bobbobbob"}},
		{"no terminal", "", "--password-stdin", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"user", "reset-password", "--data", dir}, tc.args...)
			if tc.args == nil {
				args = append(args, "bob")
			} else {
				args = append(args, "--password-stdin")
			}
			if _, err := run(t, tc.stdin, args...); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

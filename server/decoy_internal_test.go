package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gardend/gardend/store"
)

// A PlantMap user's hash as imported: pbkdf2_sha256 with the fixtures' 320,000
// iterations, of the password "1234".
const plantmapHash = "pbkdf2_sha256$320000$LuKlEyk1ZdbXx8ctkvF9c7$21bgLk3zi8fHBCZdTkAKQT8e0nIGe7A+gmS4zFaqzd4="

// A login with no hash to check — an unknown username, an account whose hash is
// unusable or too costly — runs a check of the slowest kind of hash the accounts
// hold, so that its answer cannot be told from a wrong password of an imported user;
// once the imported hashes are upgraded, the decoy is gardend's own kind again.
func TestLoginsWithoutHashCostTheSlowestStoredKind(t *testing.T) {
	s := newInternalServer(t, nil)
	s.createTestUser(t, "native", "native-pass-1")
	if got := s.decoy.Load().Kind(); !strings.HasPrefix(got, "argon2id ") {
		t.Fatalf("decoy of a site with only gardend's hashes: %s", got)
	}
	for name, hash := range map[string]string{
		"imported": plantmapHash,
		"disabled": "!",
		"costly":   "pbkdf2_sha1$10000000$KQ8zeK6wKRuR$tSJh4xdxfMJotlxfkCGjTFpGYZU=",
	} {
		if _, err := s.store.CreateUser(store.NewUser{Username: name, FirstName: "F", LastName: "L", PasswordHash: hash}); err != nil {
			t.Fatal(err)
		}
	}
	s.refreshDecoy()
	if got := s.decoy.Load().Kind(); got != "pbkdf2_sha256 iterations=320000" {
		t.Fatalf("decoy beside an imported user: %s", got)
	}
	for _, name := range []string{"nobody", "disabled", "costly", "imported"} {
		before := s.pw.Hashes()
		if rec := s.call("POST", "/login", "", s.loginBody(name, "wrong-password")); rec.Code != http.StatusBadRequest {
			t.Fatalf("%s: %d %s", name, rec.Code, rec.Body)
		}
		if n := s.pw.Hashes() - before; n != 1 {
			t.Errorf("a failed login of %s ran %d hashes, want 1", name, n)
		}
	}
	// The imported user's first login upgrades the hash: the slow kind is gone.
	if rec := s.call("POST", "/login", "", s.loginBody("imported", "1234")); rec.Code != http.StatusOK {
		t.Fatalf("imported login: %d %s", rec.Code, rec.Body)
	}
	s.refreshDecoy()
	if got := s.decoy.Load().Kind(); !strings.HasPrefix(got, "argon2id ") {
		t.Fatalf("decoy after the upgrade: %s", got)
	}
}

// BenchmarkFailedLogins measures a wrong password of a gardend account and of an
// imported PlantMap account (pbkdf2_sha256, 320,000 iterations), and a login of an
// unknown username, with the production argon2id cost: the last two must cost alike.
// cpu-ms/op is the process's CPU time per login, steadier than wall time on a busy
// machine.
func BenchmarkFailedLogins(b *testing.B) {
	cfg := Config{DataDir: b.TempDir(), Logger: zerolog.New(io.Discard), Argon2: store.DefaultArgon2,
		LoginFailLimit: 1 << 30, MaxHashing: 1}
	s, err := newForTest(b, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	hash, _ := s.pw.Hash(b.Context(), "native-pass-1")
	for name, h := range map[string]string{"native": hash, "imported": plantmapHash} {
		if _, err := s.store.CreateUser(store.NewUser{Username: name, FirstName: "F", LastName: "L", PasswordHash: h}); err != nil {
			b.Fatal(err)
		}
	}
	s.refreshDecoy()
	for _, name := range []string{"native", "imported", "unknown"} {
		b.Run(name, func(b *testing.B) {
			body := s.loginBody(name, "wrong-password")
			cpu := cpuTime()
			for b.Loop() {
				req := httptest.NewRequest("POST", "/login", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				s.Handler().ServeHTTP(rec, req)
				if rec.Code != http.StatusBadRequest {
					b.Fatal(rec.Code, rec.Body.String())
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
		})
	}
}

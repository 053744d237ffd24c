package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gardend/gardend/store"
)

// TestLoginUpgradesImportedHash: a user imported from PlantMap logs in with the
// password Django hashed; that first successful login replaces the hash with
// argon2id, and the password keeps working. A wrong password changes nothing; an
// unusable hash never lets anyone in.
func TestLoginUpgradesImportedHash(t *testing.T) {
	h := newHarness(t)
	const django = "pbkdf2_sha256$24000$KQ8zeK6wKRuR$cmhbSt1XVKuO4FGd9+AX8qSBD4Z0395nZatXTJpEtTY="
	const password = "ExjGmyUT73bFoT"
	st := h.srv.Store()
	u, err := st.CreateUser(store.NewUser{Username: "old-timer", FirstName: "O", LastName: "T", PasswordHash: django})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateUser(store.NewUser{Username: "locked", FirstName: "L", LastName: "O", PasswordHash: "!unusable"}); err != nil {
		t.Fatal(err)
	}

	h.login("old-timer", password+"x").expectProblem(http.StatusBadRequest, "")
	if got, _ := st.UserByID(u.ID); got.PasswordHash != django {
		t.Fatalf("a failed login changed the hash to %q", got.PasswordHash)
	}
	token := h.login("old-timer", password).expect(http.StatusOK).json()["token"].(string)
	got, _ := st.UserByID(u.ID)
	if !strings.HasPrefix(got.PasswordHash, "$argon2id$") {
		t.Fatalf("hash after the first login: %q", got.PasswordHash)
	}
	h.do("GET", "/user", token, nil).expect(http.StatusOK)
	h.login("old-timer", password).expect(http.StatusOK)
	h.login("old-timer", password+"x").expectProblem(http.StatusBadRequest, "")
	if again, _ := st.UserByID(u.ID); again.PasswordHash != got.PasswordHash {
		t.Error("a second login rehashed an argon2id hash")
	}

	for _, pw := range []string{"unusable", "!unusable", "x"} {
		h.login("locked", pw).expectProblem(http.StatusBadRequest, "")
	}
}

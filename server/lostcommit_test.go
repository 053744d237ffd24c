package server_test

import (
	"net/http"
	"testing"

	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/postgres/pgtest"
)

// TestLostCommitAnswerOverHTTP: the connection to PostgreSQL drops right after the
// COMMIT of a request's write went out, so the write committed and the node never
// heard. The request still gets its one answer, and takes effect once: one POST
// /companies is one company, and POST /register is 201 for the account it created
// itself (not "username is already taken").
func TestLostCommitAnswerOverHTTP(t *testing.T) {
	relay, dsn := pgtest.NewRelay(t, pgtest.NewDatabase(t))
	node := newTestServerOn(t, backend{name: "postgres", dsn: dsn})

	relay.ArmAt(pgtest.CutAfterCommit, "INSERT INTO users")
	res := node.do("POST", "/register", "", map[string]string{
		"username": "ann", "password": "pw-of-ann", "first_name": "Ann", "last_name": "Lee",
	})
	if res.code != http.StatusCreated {
		t.Fatalf("POST /register with its COMMIT's answer lost: %d %s", res.code, res.body)
	}
	var reg struct{ Token string }
	res.decode(t, &reg)

	relay.Arm(pgtest.CutAfterCommit)
	res = node.do("POST", "/companies", reg.Token, map[string]string{"name": "Orchard"})
	if res.code != http.StatusCreated {
		t.Fatalf("POST /companies with its COMMIT's answer lost: %d %s", res.code, res.body)
	}
	if relay.Cuts() != 2 {
		t.Fatalf("the relay cut %d connections, want 2", relay.Cuts())
	}
	var companies []store.Company
	node.must(http.StatusOK, "GET", "/companies", reg.Token, nil).decode(t, &companies)
	if len(companies) != 1 {
		t.Errorf("one POST /companies made %d companies: %+v", len(companies), companies)
	}
	users, err := node.store().ListUsers()
	if err != nil {
		t.Fatal(err)
	}
	if len(users) != 1 {
		t.Errorf("one POST /register made %d users", len(users))
	}
}

package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestControlCharactersInNames: a name with U+0000 or another control character, a
// bidi control or a zero-width space, is the same 400 naming the field on both stores (it was a 500 on PostgreSQL, which
// cannot store U+0000, and stored as sent on bbolt), wherever a request sets one.
func TestControlCharactersInNames(t *testing.T) {
	bothBackends(t, func(t *testing.T, b backend) {
		ts := newTestServerOn(t, b)
		token := ts.register("ann")
		company := ts.createCompany(token, "Farm")
		garden := ts.createGarden(token, company.ID, "Field")
		for bad, problem := range map[string]string{
			"a\x00b": "control characters", "red\x1b[31m": "control characters",
			"two\nlines": "control characters", "next\u0085line": "control characters",
			"invoice\u202Egpj.exe": "invisible format characters", "ann\u200B": "invisible format characters",
		} {
			for _, tc := range []struct {
				method, path, token string
				body                map[string]string
				field               string
			}{
				{"POST", "/register", "", map[string]string{"username": "bob", "password": "pw-of-bob-1", "first_name": bad, "last_name": "L"}, "first_name"},
				{"POST", "/register", "", map[string]string{"username": "bob", "password": "pw-of-bob-1", "first_name": "B", "last_name": "L", "email": "bob" + bad + "@example.org"}, "email"},
				{"PUT", "/user", token, map[string]string{"last_name": bad}, "last_name"},
				{"POST", "/companies", token, map[string]string{"name": bad}, "name"},
				{"POST", companyPath(company.ID) + "/gardens", token, map[string]string{"name": bad}, "name"},
				{"POST", gardenPath(company.ID, garden.ID) + "/beds", token, map[string]string{"uuid": "3fa85f64-5717-4562-b3fc-2c963f66afa6", "name": bad}, "name"},
			} {
				res := ts.do(tc.method, tc.path, tc.token, tc.body)
				if res.code != http.StatusBadRequest {
					t.Errorf("%s %s with %q: %d %s, want 400", tc.method, tc.path, bad, res.code, res.body)
					continue
				}
				if _, fields := res.problem(t); !strings.Contains(fields[tc.field], problem) {
					t.Errorf("%s %s with %q: the problem names %v, want %s", tc.method, tc.path, bad, fields, tc.field)
				}
			}
			// A name no account can have is an unknown one, on either store.
			res := ts.do("POST", "/login", "", map[string]string{"username": "ann" + bad, "password": "pw-of-ann"})
			if detail, _ := res.problem(t); res.code != http.StatusBadRequest || !strings.Contains(detail, "unable to log in") {
				t.Errorf("login as %q: %d %s", "ann"+bad, res.code, res.body)
			}
		}
	})
}

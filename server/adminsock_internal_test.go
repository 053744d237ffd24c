package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/gardend/gardend/store"
)

// TestAdminSocketOps: the socket serves each operation by its request type's name,
// answers values as NDJSON lines (the same values the operation gives in process),
// a download as its media type, and failures as problems with their status.
func TestAdminSocketOps(t *testing.T) {
	s, err := newForTest(t, Config{DataDir: t.TempDir(), Argon2: store.Argon2Params{Time: 1, Memory: 64, Threads: 1, KeyLen: 32}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	h := s.adminHandler()
	post := func(name, body string) *httptest.ResponseRecorder {
		t.Helper()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/ops/"+name, strings.NewReader(body)))
		return rec
	}

	for _, tc := range []struct {
		op, body    string
		status      int
		contentType string
		detail      string
	}{
		{"users.create", `{"username":"ann","password":"a long passphrase","first_name":"A","last_name":"B"}`, 200, "application/x-ndjson", ""},
		{"users.create", `{"username":"ann","password":"a long passphrase","first_name":"A","last_name":"B"}`, 400, "application/problem+json", "already taken"},
		{"users.create", `{"username":`, 400, "application/problem+json", "arguments"},
		{"beds.remove", `{"garden":1,"bed":1}`, 404, "application/problem+json", ""},
		{"pointclouds.sync", ``, 503, "application/problem+json", "no spatial data server configured"},
		{"backup.create", ``, 200, "application/x-tar", ""},
		{"no.such.op", `{}`, 404, "application/problem+json", "unknown admin operation"},
	} {
		rec := post(tc.op, tc.body)
		if rec.Code != tc.status || !strings.HasPrefix(rec.Header().Get("Content-Type"), tc.contentType) || !strings.Contains(rec.Body.String(), tc.detail) {
			t.Errorf("%s %s: %d %s %.200s", tc.op, tc.body, rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
		}
	}

	rec := post("inspect.users", "")
	lines := strings.Split(strings.TrimSuffix(rec.Body.String(), "\n"), "\n")
	var viaSocket []store.User
	if rec.Code != 200 || len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &viaSocket) != nil {
		t.Fatalf("inspect.users: %d %q", rec.Code, rec.Body.String())
	}
	var inProcess []store.User
	err = RunAdmin(context.Background(), s.admin, InspectUsers{}, func(v []store.User) error {
		inProcess = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Times come back through JSON in UTC; compare the encoded forms.
	a, _ := json.Marshal(viaSocket)
	b, _ := json.Marshal(inProcess)
	if len(viaSocket) != 1 || viaSocket[0].Username != "ann" || viaSocket[0].PasswordHash != "" || !reflect.DeepEqual(a, b) {
		t.Errorf("socket %s, in process %s", a, b)
	}

	// Operations are POSTed.
	get := httptest.NewRecorder()
	h.ServeHTTP(get, httptest.NewRequest("GET", "/ops/inspect.users", nil))
	if get.Code != http.StatusNotFound {
		t.Errorf("GET /ops/inspect.users: %d", get.Code)
	}
}

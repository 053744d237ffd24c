package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gardend/gardend/store"
)

// permWorld: alice administers company c with garden g; bob and carol have no
// permission yet; root is a site admin.
type permWorld struct {
	ts                      *testServer
	alice, bob, carol, root string
	company, garden         uint64
	companyP, gardenP       string // permission endpoint prefixes
}

func newPermWorld(t *testing.T) *permWorld {
	ts := newTestServer(t)
	w := &permWorld{ts: ts, alice: ts.register("alice"), bob: ts.register("bob"), carol: ts.register("carol"), root: ts.siteAdmin("root")}
	w.company = ts.createCompany(w.alice, "c").ID
	w.garden = ts.createGarden(w.alice, w.company, "g").ID
	w.companyP, w.gardenP = companyPath(w.company), gardenPath(w.company, w.garden)
	return w
}

func TestCreatePermissionResponse(t *testing.T) {
	w := newPermWorld(t)
	var first, again struct {
		ID         uint64
		Username   string
		Permission string
		Company    uint64
	}
	res := w.ts.must(http.StatusCreated, "POST", w.companyP+"/createPermission", w.alice, map[string]string{"username": "bob", "permission": "u"})
	if got := keys(t, res.body); got != "company,id,permission,username" {
		t.Errorf("company permission keys: %s", got)
	}
	res.decode(t, &first)
	if first.Username != "bob" || first.Permission != "u" || first.Company != w.company || first.ID == 0 {
		t.Errorf("created %+v", first)
	}
	// Writing again overwrites the same permission.
	w.ts.must(http.StatusCreated, "POST", w.companyP+"/createPermission", w.alice, map[string]string{"username": "bob", "permission": "a"}).decode(t, &again)
	if again.ID != first.ID || again.Permission != "a" {
		t.Errorf("overwrite: %+v, first %+v", again, first)
	}
	var list []map[string]any
	res = w.ts.must(http.StatusOK, "GET", w.companyP+"/permissions", w.alice, nil)
	res.decode(t, &list)
	if len(list) != 2 || list[1]["username"] != "bob" || list[1]["permission"] != "a" || len(list[1]) != 3 {
		t.Errorf("list: %s", res.body)
	}

	res = w.ts.must(http.StatusCreated, "POST", w.gardenP+"/createPermission", w.alice, map[string]string{"username": "carol", "permission": "a"})
	if got := keys(t, res.body); got != "garden,id,permission,username" {
		t.Errorf("garden permission keys: %s", got)
	}
	res = w.ts.must(http.StatusOK, "GET", w.gardenP+"/permissions", w.alice, nil)
	if !strings.Contains(string(res.body), `"username":"carol","permission":"a"`) {
		t.Errorf("garden list: %s", res.body)
	}
}

func TestPermissionEdgeCases(t *testing.T) {
	w := newPermWorld(t)
	w.ts.grant(w.alice, w.company, 0, "bob", store.LevelUser)
	w.ts.grant(w.alice, w.company, w.garden, "carol", store.LevelAdmin)
	other := w.ts.createCompany(w.bob, "bob's")

	tests := []struct {
		name, token, path string
		body              any
		want              int
		detail            string // part of the problem detail
	}{
		{"self overwrite", w.alice, w.companyP + "/createPermission", map[string]string{"username": "alice", "permission": "u"}, 403, "your own permission"},
		{"self overwrite as admin", w.alice, w.companyP + "/createPermission", map[string]string{"username": "alice", "permission": "a"}, 403, "your own permission"},
		{"self removal", w.alice, w.companyP + "/removePermission", map[string]string{"username": "alice"}, 403, "your own permission"},
		{"garden self removal", w.carol, w.gardenP + "/removePermission", map[string]string{"username": "carol"}, 403, "your own permission"},
		{"remove what does not exist", w.alice, w.companyP + "/removePermission", map[string]string{"username": "carol"}, 200, ""},
		{"unknown username", w.alice, w.companyP + "/createPermission", map[string]string{"username": "nobody", "permission": "u"}, 400, `unknown user "nobody"`},
		{"unknown username on removal", w.alice, w.gardenP + "/removePermission", map[string]string{"username": "nobody"}, 400, "unknown user"},
		{"missing permission", w.alice, w.companyP + "/createPermission", map[string]string{"username": "bob"}, 400, "permission is required"},
		{"missing username", w.alice, w.companyP + "/createPermission", map[string]string{"permission": "u"}, 400, "username is required"},
		{"missing username on removal", w.alice, w.companyP + "/removePermission", map[string]string{}, 400, "username is required"},
		{"empty body", w.alice, w.gardenP + "/createPermission", "", 400, "empty"},
		{"bad letter", w.alice, w.companyP + "/createPermission", map[string]string{"username": "bob", "permission": "x"}, 400, "permission must be 'u' or 'a'"},
		{"letter as number", w.alice, w.companyP + "/createPermission", map[string]any{"username": "bob", "permission": 1}, 400, "permission must be a string"},
		// The order of checks: admin before body, body before self, self before existence.
		{"reader with bad body", w.bob, w.companyP + "/createPermission", map[string]string{"permission": "x"}, 403, ""},
		{"stranger with bad body", w.ts.register("erin"), w.companyP + "/createPermission", "{", 404, ""},
		{"admin with bad letter for self", w.alice, w.companyP + "/createPermission", map[string]string{"username": "alice", "permission": "x"}, 400, ""},
		{"garden under the wrong company", w.root, gardenPath(other.ID, w.garden) + "/createPermission", map[string]string{"username": "bob", "permission": "u"}, 404, ""},
		{"garden admin on the company", w.carol, w.companyP + "/createPermission", map[string]string{"username": "bob", "permission": "a"}, 403, "only admins of the company"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := w.ts.do("POST", tc.path, tc.token, tc.body)
			if res.code != tc.want {
				t.Fatalf("status %d, want %d; body %s", res.code, tc.want, res.body)
			}
			if tc.want >= 400 && tc.detail != "" {
				if detail, _ := res.problem(t); !strings.Contains(detail, tc.detail) {
					t.Errorf("detail %q, want it to contain %q", detail, tc.detail)
				}
			}
		})
	}
	res := w.ts.must(http.StatusOK, "POST", w.companyP+"/removePermission", w.alice, map[string]string{"username": "carol"})
	if string(res.body) != `{"removed":false}` {
		t.Errorf("removing a permission that does not exist: %s", res.body)
	}
}

func TestLastCompanyAdmin(t *testing.T) {
	w := newPermWorld(t)
	demote := map[string]string{"username": "alice", "permission": "u"}
	remove := map[string]string{"username": "alice"}
	// A site admin is not a company admin: alice is still the last one.
	for _, req := range []struct {
		path string
		body any
	}{{w.companyP + "/createPermission", demote}, {w.companyP + "/removePermission", remove}} {
		res := w.ts.must(http.StatusForbidden, "POST", req.path, w.root, req.body)
		if detail, _ := res.problem(t); !strings.Contains(detail, "last admin") {
			t.Errorf("detail %q", detail)
		}
	}
	// With a second admin, the first may be demoted, and then removed.
	w.ts.grant(w.alice, w.company, 0, "bob", store.LevelAdmin)
	w.ts.must(http.StatusCreated, "POST", w.companyP+"/createPermission", w.root, demote)
	w.ts.must(http.StatusOK, "POST", w.companyP+"/removePermission", w.bob, remove)
	// Now bob is the last.
	w.ts.must(http.StatusForbidden, "POST", w.companyP+"/removePermission", w.root, map[string]string{"username": "bob"})
	// alice lost the company with her permission.
	w.ts.must(http.StatusNotFound, "GET", w.companyP, w.alice, nil)
}

func TestLastGardenAdminRemovable(t *testing.T) {
	w := newPermWorld(t)
	w.ts.grant(w.alice, w.company, w.garden, "carol", store.LevelAdmin)
	// carol is the garden's only admin; the company still has alice.
	res := w.ts.must(http.StatusOK, "POST", w.gardenP+"/removePermission", w.alice, map[string]string{"username": "carol"})
	if string(res.body) != `{"removed":true}` {
		t.Errorf("body %s", res.body)
	}
	w.ts.grant(w.alice, w.company, w.garden, "carol", store.LevelAdmin)
	w.ts.must(http.StatusCreated, "POST", w.gardenP+"/createPermission", w.root, map[string]string{"username": "carol", "permission": "u"})
	// A garden admin may manage the garden's other permissions, not the company's.
	w.ts.grant(w.alice, w.company, w.garden, "bob", store.LevelAdmin)
	w.ts.must(http.StatusCreated, "POST", w.gardenP+"/createPermission", w.bob, map[string]string{"username": "carol", "permission": "a"})
	w.ts.must(http.StatusForbidden, "POST", w.companyP+"/createPermission", w.bob, map[string]string{"username": "carol", "permission": "u"})
}

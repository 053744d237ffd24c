package storetest

import (
	"testing"

	"github.com/gardend/gardend/store"
)

func testCompanyPermissionRules(t *testing.T, h Harness) {
	st, _ := open(t, h)
	alice := mustUser(t, st, "alice")
	bob := mustUser(t, st, "bob")
	mustUser(t, st, "carol")
	c := mustCompany(t, st, alice, "c")

	p, err := st.SetCompanyPermission(c.ID, alice.ID, "bob", store.LevelUser)
	if err != nil {
		t.Fatal(err)
	}
	if p.Username != "bob" || p.UserID != bob.ID || p.Level != store.LevelUser || p.Company != c.ID || p.ID == 0 {
		t.Errorf("permission %+v", p)
	}
	// Writing again overwrites and keeps the id.
	again, err := st.SetCompanyPermission(c.ID, alice.ID, "bob", store.LevelAdmin)
	if err != nil || again.ID != p.ID || again.Level != store.LevelAdmin {
		t.Errorf("overwrite: %+v, %v", again, err)
	}
	perms, _ := st.CompanyPermissions(c.ID)
	if len(perms) != 2 || perms[1].ID != p.ID || perms[1].Level != store.LevelAdmin {
		t.Errorf("permissions after overwrite: %+v", perms)
	}

	_, err = st.SetCompanyPermission(c.ID, alice.ID, "alice", store.LevelUser)
	wantErr(t, err, store.ErrForbidden)
	_, err = st.RemoveCompanyPermission(c.ID, alice.ID, "alice")
	wantErr(t, err, store.ErrForbidden)
	_, err = st.SetCompanyPermission(c.ID, alice.ID, "nobody", store.LevelUser)
	wantErr(t, err, store.ErrInvalid)
	for _, bad := range []store.Level{"", "x", "U", "ua"} {
		_, err = st.SetCompanyPermission(c.ID, alice.ID, "bob", bad)
		wantErr(t, err, store.ErrInvalid)
	}
	_, err = st.SetCompanyPermission(c.ID, alice.ID, "", store.LevelUser)
	wantErr(t, err, store.ErrInvalid)
	_, err = st.SetCompanyPermission(999, alice.ID, "bob", store.LevelUser)
	wantErr(t, err, store.ErrNotFound)
	_, err = st.RemoveCompanyPermission(999, alice.ID, "bob")
	wantErr(t, err, store.ErrNotFound)

	removed, err := st.RemoveCompanyPermission(c.ID, alice.ID, "carol")
	if err != nil || removed {
		t.Errorf("removing a permission that does not exist: %v, %v", removed, err)
	}

	// Two admins: one may go. Then the last one stays, whoever asks (0: an operator).
	if removed, err := st.RemoveCompanyPermission(c.ID, bob.ID, "alice"); err != nil || !removed {
		t.Fatalf("remove alice: %v, %v", removed, err)
	}
	_, err = st.RemoveCompanyPermission(c.ID, 0, "bob")
	wantErr(t, err, store.ErrForbidden)
	_, err = st.SetCompanyPermission(c.ID, 0, "bob", store.LevelUser)
	wantErr(t, err, store.ErrForbidden)
	if _, err := st.SetCompanyPermission(c.ID, 0, "bob", store.LevelAdmin); err != nil {
		t.Errorf("re-granting admin to the last admin: %v", err)
	}
	if perms, _ := st.CompanyPermissions(c.ID); len(perms) != 1 || perms[0].Username != "bob" {
		t.Errorf("permissions: %+v", perms)
	}
	// A site admin is no member: it does not count as the company's admin.
	site, err := st.CreateUser(store.NewUser{Username: "root", FirstName: "R", LastName: "R", PasswordHash: "h", SiteAdmin: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.SetCompanyPermission(c.ID, site.ID, "bob", store.LevelUser)
	wantErr(t, err, store.ErrForbidden)
}

func testGardenPermissionRules(t *testing.T, h Harness) {
	st, _ := open(t, h)
	alice := mustUser(t, st, "alice")
	bob := mustUser(t, st, "bob")
	c := mustCompany(t, st, alice, "c")
	g := mustGarden(t, st, c, "g")

	p, err := st.SetGardenPermission(g.ID, alice.ID, "bob", store.LevelAdmin)
	if err != nil || p.Garden != g.ID || p.Level != store.LevelAdmin || p.UserID != bob.ID || p.ID == 0 {
		t.Fatalf("%+v, %v", p, err)
	}
	again, err := st.SetGardenPermission(g.ID, alice.ID, "bob", store.LevelUser)
	if err != nil || again.ID != p.ID || again.Level != store.LevelUser {
		t.Errorf("overwrite: %+v, %v", again, err)
	}
	_, err = st.SetGardenPermission(g.ID, bob.ID, "bob", store.LevelUser)
	wantErr(t, err, store.ErrForbidden)
	_, err = st.RemoveGardenPermission(g.ID, bob.ID, "bob")
	wantErr(t, err, store.ErrForbidden)
	_, err = st.SetGardenPermission(g.ID, alice.ID, "nobody", store.LevelUser)
	wantErr(t, err, store.ErrInvalid)
	_, err = st.SetGardenPermission(g.ID, alice.ID, "bob", "x")
	wantErr(t, err, store.ErrInvalid)
	_, err = st.SetGardenPermission(999, alice.ID, "bob", store.LevelUser)
	wantErr(t, err, store.ErrNotFound)
	_, err = st.RemoveGardenPermission(999, alice.ID, "bob")
	wantErr(t, err, store.ErrNotFound)
	if perms, err := st.GardenPermissions(g.ID); err != nil || len(perms) != 1 || perms[0].Username != "bob" || perms[0].Level != store.LevelUser {
		t.Errorf("GardenPermissions = %+v, %v", perms, err)
	}

	// The garden's last admin may go: the company's admins still administer it.
	if removed, err := st.RemoveGardenPermission(g.ID, alice.ID, "bob"); err != nil || !removed {
		t.Errorf("remove last garden permission: %v, %v", removed, err)
	}
	if removed, err := st.RemoveGardenPermission(g.ID, alice.ID, "bob"); err != nil || removed {
		t.Errorf("remove again: %v, %v", removed, err)
	}
	if perms, err := st.GardenPermissions(g.ID); err != nil || perms == nil || len(perms) != 0 {
		t.Errorf("GardenPermissions = %+v, %v; want an empty list", perms, err)
	}
	_, err = st.GardenPermissions(999)
	wantErr(t, err, store.ErrNotFound)
}

func testUsernameFollowsRename(t *testing.T, h Harness) {
	st, _ := open(t, h)
	alice := mustUser(t, st, "alice")
	bob := mustUser(t, st, "bob")
	c := mustCompany(t, st, alice, "c")
	g := mustGarden(t, st, c, "g")
	if _, err := st.SetCompanyPermission(c.ID, alice.ID, "bob", store.LevelUser); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetGardenPermission(g.ID, alice.ID, "bob", store.LevelAdmin); err != nil {
		t.Fatal(err)
	}
	if _, err := st.UpdateUser(bob.ID, store.UserUpdate{Username: ptr("robert")}); err != nil {
		t.Fatal(err)
	}
	perms, _ := st.CompanyPermissions(c.ID)
	if len(perms) != 2 || perms[1].Username != "robert" {
		t.Errorf("permissions: %+v", perms)
	}
	if gp, _ := st.GardenPermissions(g.ID); len(gp) != 1 || gp[0].Username != "robert" {
		t.Errorf("garden permissions: %+v", gp)
	}
	list, err := st.ListPermissions()
	if err != nil || len(list.Company) != 2 || len(list.Garden) != 1 {
		t.Fatalf("ListPermissions = %+v, %v", list, err)
	}
	// By company, then by user id.
	if list.Company[0].UserID != alice.ID || list.Company[1].Username != "robert" || list.Company[1].Company != c.ID ||
		list.Garden[0].Username != "robert" || list.Garden[0].Garden != g.ID || list.Garden[0].Level != store.LevelAdmin {
		t.Errorf("ListPermissions = %+v", list)
	}
	// The old name is unknown now.
	_, err = st.SetCompanyPermission(c.ID, alice.ID, "bob", store.LevelAdmin)
	wantErr(t, err, store.ErrInvalid)
}

// testPermissionUsernameSpellings: a permission change finds its user as login does,
// through any spelling of the name that normalises to it, and answers with the name
// the account has, not the spelling sent; a lookalike of a name is nobody.
func testPermissionUsernameSpellings(t *testing.T, h Harness) {
	st, _ := open(t, h)
	owner := mustUser(t, st, "owner")
	bob := mustUser(t, st, "bob")
	c := mustCompany(t, st, owner, "co")
	g := mustGarden(t, st, c, "g")
	cp, err := st.SetCompanyPermission(c.ID, owner.ID, "ｂｏｂ", store.LevelUser)
	if err != nil || cp.UserID != bob.ID || cp.Username != "bob" {
		t.Fatalf("company permission for ｂｏｂ: %+v, %v", cp, err)
	}
	gp, err := st.SetGardenPermission(g.ID, owner.ID, "𝐛𝐨𝐛", store.LevelAdmin)
	if err != nil || gp.UserID != bob.ID || gp.Username != "bob" {
		t.Fatalf("garden permission for 𝐛𝐨𝐛: %+v, %v", gp, err)
	}
	_, err = st.SetCompanyPermission(c.ID, owner.ID, "b0b", store.LevelUser)
	wantErr(t, err, store.ErrInvalid)
	// Nor may the owner reach their own permission through another spelling.
	_, err = st.RemoveCompanyPermission(c.ID, owner.ID, "ｏｗｎｅｒ")
	wantErr(t, err, store.ErrForbidden)
	if removed, err := st.RemoveGardenPermission(g.ID, owner.ID, "ｂob"); err != nil || !removed {
		t.Fatalf("remove through ｂob: %v, %v", removed, err)
	}
}

package store_test

import (
	"testing"

	"github.com/gardend/gardend/store"
)

func TestCompanyPermissionRules(t *testing.T) {
	st := mustOpenStore(t)
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
	if len(perms) != 2 {
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
}

func TestGardenPermissionRules(t *testing.T) {
	st := mustOpenStore(t)
	alice := mustUser(t, st, "alice")
	bob := mustUser(t, st, "bob")
	c := mustCompany(t, st, alice, "c")
	g := mustGarden(t, st, c, "g")

	p, err := st.SetGardenPermission(g.ID, alice.ID, "bob", store.LevelAdmin)
	if err != nil || p.Garden != g.ID || p.Level != store.LevelAdmin {
		t.Fatalf("%+v, %v", p, err)
	}
	_, err = st.SetGardenPermission(g.ID, bob.ID, "bob", store.LevelUser)
	wantErr(t, err, store.ErrForbidden)
	_, err = st.SetGardenPermission(g.ID, alice.ID, "nobody", store.LevelUser)
	wantErr(t, err, store.ErrInvalid)
	_, err = st.SetGardenPermission(999, alice.ID, "bob", store.LevelUser)
	wantErr(t, err, store.ErrNotFound)

	// The garden's last admin may go: the company's admins still administer it.
	if removed, err := st.RemoveGardenPermission(g.ID, alice.ID, "bob"); err != nil || !removed {
		t.Errorf("remove last garden admin: %v, %v", removed, err)
	}
	if removed, err := st.RemoveGardenPermission(g.ID, alice.ID, "bob"); err != nil || removed {
		t.Errorf("remove again: %v, %v", removed, err)
	}
	if perms, err := st.GardenPermissions(g.ID); err != nil || len(perms) != 0 {
		t.Errorf("GardenPermissions = %+v, %v", perms, err)
	}
}

func TestUsernameFollowsRename(t *testing.T) {
	st := mustOpenStore(t)
	alice := mustUser(t, st, "alice")
	bob := mustUser(t, st, "bob")
	c := mustCompany(t, st, alice, "c")
	if _, err := st.SetCompanyPermission(c.ID, alice.ID, "bob", store.LevelUser); err != nil {
		t.Fatal(err)
	}
	name := "robert"
	if _, err := st.UpdateUser(bob.ID, store.UserUpdate{Username: &name}); err != nil {
		t.Fatal(err)
	}
	perms, _ := st.CompanyPermissions(c.ID)
	if len(perms) != 2 || perms[1].Username != "robert" {
		t.Errorf("permissions: %+v", perms)
	}
	list, err := st.ListPermissions()
	if err != nil || len(list.Company) != 2 || len(list.Garden) != 0 {
		t.Errorf("ListPermissions = %+v, %v", list, err)
	}
}

package store_test

import (
	"slices"
	"testing"

	"github.com/gardend/gardend/store"
)

// TestDeleteCompanyCascade deletes a company with gardens, beds, images and permissions
// of every kind beside a company that must stay whole.
func TestDeleteCompanyCascade(t *testing.T) {
	st := mustOpenStore(t)
	alice := mustUser(t, st, "alice")
	bob := mustUser(t, st, "bob")
	doomed := mustCompany(t, st, alice, "doomed")
	kept := mustCompany(t, st, alice, "kept")
	g1 := mustGarden(t, st, doomed, "g1")
	g2 := mustGarden(t, st, doomed, "g2")
	keptGarden := mustGarden(t, st, kept, "k")
	if _, err := st.SetCompanyPermission(doomed.ID, alice.ID, "bob", store.LevelUser); err != nil {
		t.Fatal(err)
	}
	for _, g := range []store.Garden{g1, g2, keptGarden} {
		if _, err := st.SetGardenPermission(g.ID, alice.ID, "bob", store.LevelAdmin); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.SetGardenImage(g1.ID, "images/g1.png", corners); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetGardenImage(keptGarden.ID, "images/k.png", corners); err != nil {
		t.Fatal(err)
	}
	for _, b := range []struct {
		g    store.Garden
		uuid string
	}{{g1, uuidA}, {g2, uuidA}, {g2, uuidB}, {keptGarden, uuidB}} {
		if _, err := st.CreateBed(b.g.ID, b.uuid, ""); err != nil {
			t.Fatal(err)
		}
	}
	before := keyCounts(t, st)

	r, err := st.DeleteCompany(doomed.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.ImagePaths, []string{"images/g1.png"}) {
		t.Errorf("ImagePaths = %q", r.ImagePaths)
	}
	// uuidB is still used by the kept company's bed.
	if !slices.Equal(r.BedUUIDs, []string{uuidA}) {
		t.Errorf("BedUUIDs = %q", r.BedUUIDs)
	}

	_, err = st.Company(doomed.ID)
	wantErr(t, err, store.ErrNotFound)
	for _, g := range []store.Garden{g1, g2} {
		_, err = st.Garden(g.ID)
		wantErr(t, err, store.ErrNotFound)
		_, err = st.BedsOfGarden(g.ID)
		wantErr(t, err, store.ErrNotFound)
		_, _, err = st.GardenImage(g.ID)
		wantErr(t, err, store.ErrNotFound)
		_, err = st.GardenPermissions(g.ID)
		wantErr(t, err, store.ErrNotFound)
	}
	_, err = st.CompanyPermissions(doomed.ID)
	wantErr(t, err, store.ErrNotFound)
	if gs, _ := st.GardensVisibleTo(bob.ID); !slices.Equal(gardenIDs(gs), []uint64{keptGarden.ID}) {
		t.Errorf("bob sees %v", gardenIDs(gs))
	}
	if cs, _ := st.CompaniesOfUser(alice.ID); len(cs) != 1 || cs[0].ID != kept.ID {
		t.Errorf("alice's companies: %+v", cs)
	}
	if paths, _ := st.ImagePaths(); len(paths) != 1 || !paths["images/k.png"] {
		t.Errorf("ImagePaths = %v", paths)
	}

	// Exactly the doomed company's records are gone from every bucket.
	after := keyCounts(t, st)
	want := map[string]int{
		"companies": 1, "gardens": 2, "company_gardens": 2, "garden_coords": 1,
		"perm_company": 2, "perm_user_company": 2, "perm_garden": 2, "perm_user_garden": 2,
		"beds": 3, "garden_beds": 3, "bed_uuids": 3,
	}
	for name, n := range want {
		if before[name]-after[name] != n {
			t.Errorf("%s: %d keys before, %d after; want %d removed", name, before[name], after[name], n)
		}
	}

	_, err = st.DeleteCompany(doomed.ID)
	wantErr(t, err, store.ErrNotFound)
}

func TestDeleteGarden(t *testing.T) {
	st := mustOpenStore(t)
	alice := mustUser(t, st, "alice")
	mustUser(t, st, "bob")
	c := mustCompany(t, st, alice, "c")
	other := mustCompany(t, st, alice, "other")
	g := mustGarden(t, st, c, "g")
	if _, err := st.SetGardenPermission(g.ID, alice.ID, "bob", store.LevelUser); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetGardenImage(g.ID, "images/g.png", corners); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateBed(g.ID, uuidA, ""); err != nil {
		t.Fatal(err)
	}
	_, err := st.DeleteGarden(other.ID, g.ID)
	wantErr(t, err, store.ErrNotFound)
	r, err := st.DeleteGarden(c.ID, g.ID)
	if err != nil || !slices.Equal(r.ImagePaths, []string{"images/g.png"}) || !slices.Equal(r.BedUUIDs, []string{uuidA}) {
		t.Fatalf("DeleteGarden = %+v, %v", r, err)
	}
	if gs, _ := st.GardensOfCompany(c.ID); len(gs) != 0 {
		t.Errorf("gardens left: %+v", gs)
	}
	// The company and its admin stay.
	if perms, _ := st.CompanyPermissions(c.ID); len(perms) != 1 {
		t.Errorf("company permissions: %+v", perms)
	}
}

func keyCounts(t *testing.T, st *store.Store) map[string]int {
	t.Helper()
	stats, err := st.Stats()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, b := range stats.Buckets {
		out[b.Name] = b.Keys
	}
	return out
}

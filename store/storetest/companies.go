package storetest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/store"
)

func testCreateCompany(t *testing.T, h Harness) {
	st, _ := open(t, h)
	alice := mustUser(t, st, "alice")
	c := mustCompany(t, st, alice, "Green Roofs")
	if c.ID == 0 || c.Name != "Green Roofs" {
		t.Fatalf("company %+v", c)
	}
	if got, err := st.Company(c.ID); err != nil || got != c {
		t.Errorf("Company = %+v, %v", got, err)
	}
	perms, err := st.CompanyPermissions(c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(perms) != 1 || perms[0].Username != "alice" || perms[0].UserID != alice.ID || perms[0].Level != store.LevelAdmin || perms[0].ID == 0 {
		t.Errorf("creator's permission: %+v", perms)
	}
	mine, err := st.CompaniesOfUser(alice.ID)
	if err != nil || len(mine) != 1 || mine[0] != c {
		t.Errorf("CompaniesOfUser = %+v, %v", mine, err)
	}
	for _, name := range []string{"", "   ", strings.Repeat("x", 129)} {
		_, err := st.CreateCompany(alice.ID, name)
		wantErr(t, err, store.ErrInvalid)
	}
	if _, err := st.CreateCompany(alice.ID, strings.Repeat("ü", 128)); err != nil {
		t.Errorf("128 characters: %v", err)
	}
	// Nothing is written for a creator that does not exist.
	_, err = st.CreateCompany(999, "Ghost")
	wantErr(t, err, store.ErrNotFound)
	all, err := st.Companies()
	if err != nil || len(all) != 2 || all[0].ID != c.ID || all[1].ID <= c.ID {
		t.Errorf("Companies = %+v, %v", all, err)
	}
	_, err = st.Company(999)
	wantErr(t, err, store.ErrNotFound)
	if cs, err := st.CompaniesOfUser(999); err != nil || len(cs) != 0 {
		t.Errorf("CompaniesOfUser(nobody) = %+v, %v", cs, err)
	}
}

func testGardenVisibility(t *testing.T, h Harness) {
	st, _ := open(t, h)
	owner := mustUser(t, st, "owner")
	bob := mustUser(t, st, "bob")
	c1 := mustCompany(t, st, owner, "c1")
	c2 := mustCompany(t, st, owner, "c2")
	g1 := mustGarden(t, st, c1, "g1")
	g2 := mustGarden(t, st, c1, "g2")
	g3 := mustGarden(t, st, c2, "g3")
	g4 := mustGarden(t, st, c2, "g4")
	if g1.Company != c1.ID || g1.ImagePath != nil || g1.Name != "g1" {
		t.Errorf("garden %+v", g1)
	}
	_, err := st.CreateGarden(999, "orphan")
	wantErr(t, err, store.ErrNotFound)
	_, err = st.CreateGarden(c1.ID, " ")
	wantErr(t, err, store.ErrInvalid)
	if got, err := st.Garden(g3.ID); err != nil || got.ID != g3.ID || got.Company != c2.ID {
		t.Errorf("Garden = %+v, %v", got, err)
	}
	_, err = st.Garden(999)
	wantErr(t, err, store.ErrNotFound)

	// bob: member of c1, and also garden member of g1 (listed once) and g4.
	if _, err := st.SetCompanyPermission(c1.ID, owner.ID, "bob", store.LevelUser); err != nil {
		t.Fatal(err)
	}
	for _, g := range []store.Garden{g1, g4} {
		if _, err := st.SetGardenPermission(g.ID, owner.ID, "bob", store.LevelAdmin); err != nil {
			t.Fatal(err)
		}
	}
	got, err := st.GardensVisibleTo(bob.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ids := gardenIDs(got); !slices.Equal(ids, []uint64{g1.ID, g2.ID, g4.ID}) {
		t.Errorf("GardensVisibleTo(bob) = %v", ids)
	}
	if got, _ := st.GardensVisibleTo(owner.ID); !slices.Equal(gardenIDs(got), []uint64{g1.ID, g2.ID, g3.ID, g4.ID}) {
		t.Errorf("owner sees %v", gardenIDs(got))
	}
	stranger := mustUser(t, st, "stranger")
	if got, err := st.GardensVisibleTo(stranger.ID); err != nil || got == nil || len(got) != 0 {
		t.Errorf("stranger sees %v, %v; want an empty list", got, err)
	}

	// Within a company: all of it for members, own gardens for garden members.
	if got, _ := st.CompanyGardensVisibleTo(c1.ID, bob.ID); !slices.Equal(gardenIDs(got), []uint64{g1.ID, g2.ID}) {
		t.Errorf("c1 for bob: %v", gardenIDs(got))
	}
	if got, _ := st.CompanyGardensVisibleTo(c2.ID, bob.ID); !slices.Equal(gardenIDs(got), []uint64{g4.ID}) {
		t.Errorf("c2 for bob: %v", gardenIDs(got))
	}
	if got, err := st.CompanyGardensVisibleTo(c2.ID, stranger.ID); err != nil || len(got) != 0 {
		t.Errorf("c2 for a stranger: %v, %v", gardenIDs(got), err)
	}
	if got, _ := st.GardensOfCompany(c2.ID); !slices.Equal(gardenIDs(got), []uint64{g3.ID, g4.ID}) {
		t.Errorf("GardensOfCompany(c2) = %v", gardenIDs(got))
	}
	_, err = st.GardensOfCompany(999)
	wantErr(t, err, store.ErrNotFound)
	_, err = st.CompanyGardensVisibleTo(999, bob.ID)
	wantErr(t, err, store.ErrNotFound)
	if all, _ := st.Gardens(); !slices.Equal(gardenIDs(all), []uint64{g1.ID, g2.ID, g3.ID, g4.ID}) {
		t.Errorf("Gardens: %v", gardenIDs(all))
	}
	// Garden-only membership does not list the company.
	if cs, _ := st.CompaniesOfUser(bob.ID); len(cs) != 1 || cs[0].ID != c1.ID {
		t.Errorf("CompaniesOfUser(bob) = %+v", cs)
	}
}

func testAccess(t *testing.T, h Harness) {
	st, _ := open(t, h)
	owner := mustUser(t, st, "owner")
	gardener := mustUser(t, st, "gardener")
	c := mustCompany(t, st, owner, "c")
	other := mustCompany(t, st, owner, "other")
	g := mustGarden(t, st, c, "g")
	g2 := mustGarden(t, st, c, "g2")
	og := mustGarden(t, st, other, "og")
	if _, err := st.SetGardenPermission(g.ID, owner.ID, "gardener", store.LevelAdmin); err != nil {
		t.Fatal(err)
	}

	gotC, a, err := st.CompanyAccess(c.ID, gardener.ID)
	if err != nil || gotC != c || a != (store.Access{GardenMember: true}) {
		t.Errorf("gardener on c: %+v %+v, %v", gotC, a, err)
	}
	_, a, _ = st.CompanyAccess(other.ID, gardener.ID)
	if a != (store.Access{}) {
		t.Errorf("gardener on other: %+v", a)
	}
	_, a, _ = st.CompanyAccess(c.ID, owner.ID)
	if a != (store.Access{Company: store.LevelAdmin}) {
		t.Errorf("owner on c: %+v", a)
	}
	gotG, a, err := st.GardenAccess(c.ID, g.ID, gardener.ID)
	if err != nil || gotG.ID != g.ID || gotG.Company != c.ID || a != (store.Access{Garden: store.LevelAdmin, GardenMember: true}) {
		t.Errorf("GardenAccess = %+v %+v %v", gotG, a, err)
	}
	// Another garden of the same company: a garden member, no garden permission.
	if _, a, _ := st.GardenAccess(c.ID, g2.ID, gardener.ID); a != (store.Access{GardenMember: true}) {
		t.Errorf("gardener on g2: %+v", a)
	}
	if _, a, _ := st.GardenAccess(c.ID, g2.ID, owner.ID); a != (store.Access{Company: store.LevelAdmin}) {
		t.Errorf("owner on g2: %+v", a)
	}
	_, _, err = st.GardenAccess(c.ID, og.ID, owner.ID)
	wantErr(t, err, store.ErrNotFound)
	_, _, err = st.GardenAccess(c.ID, 999, owner.ID)
	wantErr(t, err, store.ErrNotFound)
	_, _, err = st.CompanyAccess(999, owner.ID)
	wantErr(t, err, store.ErrNotFound)

	bed, err := st.CreateBed(g.ID, uuidA, "")
	if err != nil {
		t.Fatal(err)
	}
	_, gotBed, a, err := st.BedAccess(c.ID, g.ID, bed.ID, gardener.ID)
	if err != nil || gotBed != bed || a.Garden != store.LevelAdmin {
		t.Errorf("BedAccess = %+v %+v %v", gotBed, a, err)
	}
	_, _, _, err = st.BedAccess(other.ID, og.ID, bed.ID, owner.ID)
	wantErr(t, err, store.ErrNotFound)
	_, _, _, err = st.BedAccess(c.ID, g2.ID, bed.ID, owner.ID)
	wantErr(t, err, store.ErrNotFound)
	_, _, _, err = st.BedAccess(other.ID, g.ID, bed.ID, owner.ID)
	wantErr(t, err, store.ErrNotFound)
	_, _, _, err = st.BedAccess(c.ID, g.ID, 999, owner.ID)
	wantErr(t, err, store.ErrNotFound)
}

// testDeleteCompanyCascade deletes a company with gardens, beds, images, positions and
// permissions of every kind beside a company that must stay whole.
func testDeleteCompanyCascade(t *testing.T, h Harness) {
	st, _ := open(t, h)
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
	var keptBed store.Bed
	for _, b := range []struct {
		g    store.Garden
		uuid string
	}{{g1, uuidA}, {g2, uuidA}, {g2, uuidB}, {keptGarden, uuidB}} {
		bed, err := st.CreateBed(b.g.ID, b.uuid, "")
		if err != nil {
			t.Fatal(err)
		}
		keptBed = bed
	}
	mustEnqueue(t, st, time.Hour, job(uuidA, "c1", inputsMap), job(uuidB, "c1", inputsMap))
	for _, p := range []string{uuidA, uuidB} {
		if err := st.CompleteCloudJob(store.PlantPosition{Project: p, Cloud: "c2", CloudInputs: inputsMap, Position: &store.LatLon{}}); err != nil {
			t.Fatal(err)
		}
	}

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
	if cs, _ := st.CompaniesOfUser(bob.ID); len(cs) != 0 {
		t.Errorf("bob's companies: %+v", cs)
	}
	if paths, _ := st.ImagePaths(); len(paths) != 1 || !paths["images/k.png"] {
		t.Errorf("ImagePaths = %v", paths)
	}
	// Exactly the doomed company's records are gone.
	if beds, _ := st.Beds(); len(beds) != 1 || beds[0] != keptBed {
		t.Errorf("beds left: %+v", beds)
	}
	list, err := st.ListPermissions()
	if err != nil || len(list.Company) != 1 || list.Company[0].Company != kept.ID ||
		len(list.Garden) != 1 || list.Garden[0].Garden != keptGarden.ID {
		t.Errorf("permissions left: %+v, %v", list, err)
	}
	if a, _ := st.CloudState(uuidA); len(a.Positions)+len(a.Jobs) != 0 {
		t.Errorf("clouds of the dropped project stayed: %+v", a)
	}
	if b, _ := st.CloudState(uuidB); len(b.Positions) != 1 || len(b.Jobs) != 1 {
		t.Errorf("clouds of the kept project: %+v", b)
	}
	if _, cs, err := st.GardenImage(keptGarden.ID); err != nil || !slices.Equal(cs, corners) {
		t.Errorf("kept image: %v, %v", cs, err)
	}

	_, err = st.DeleteCompany(doomed.ID)
	wantErr(t, err, store.ErrNotFound)
}

func testDeleteGarden(t *testing.T, h Harness) {
	st, _ := open(t, h)
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
	_, err = st.DeleteGarden(c.ID, 999)
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
	if list, _ := st.ListPermissions(); len(list.Garden) != 0 {
		t.Errorf("garden permissions left: %+v", list.Garden)
	}
}

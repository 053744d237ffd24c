package store_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/gardend/gardend/store"
)

func TestCreateCompany(t *testing.T) {
	st := mustOpenStore(t)
	alice := mustUser(t, st, "alice")
	c := mustCompany(t, st, alice, "Green Roofs")
	if c.ID == 0 || c.Name != "Green Roofs" {
		t.Fatalf("company %+v", c)
	}
	perms, err := st.CompanyPermissions(c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(perms) != 1 || perms[0].Username != "alice" || perms[0].Level != store.LevelAdmin || perms[0].ID == 0 {
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
	if err != nil || len(all) != 2 {
		t.Errorf("Companies = %+v, %v", all, err)
	}
}

func TestGardenVisibility(t *testing.T) {
	st := mustOpenStore(t)
	owner := mustUser(t, st, "owner")
	bob := mustUser(t, st, "bob")
	c1 := mustCompany(t, st, owner, "c1")
	c2 := mustCompany(t, st, owner, "c2")
	g1 := mustGarden(t, st, c1, "g1")
	g2 := mustGarden(t, st, c1, "g2")
	g3 := mustGarden(t, st, c2, "g3")
	g4 := mustGarden(t, st, c2, "g4")
	if _, err := st.CreateGarden(999, "orphan"); err == nil {
		t.Error("garden of a missing company created")
	}

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
	if got, _ := st.GardensVisibleTo(owner.ID); len(got) != 4 {
		t.Errorf("owner sees %d gardens", len(got))
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
	if got, _ := st.GardensOfCompany(c2.ID); !slices.Equal(gardenIDs(got), []uint64{g3.ID, g4.ID}) {
		t.Errorf("GardensOfCompany(c2) = %v", gardenIDs(got))
	}
	_, err = st.CompanyGardensVisibleTo(999, bob.ID)
	wantErr(t, err, store.ErrNotFound)
	if all, _ := st.Gardens(); len(all) != 4 {
		t.Errorf("Gardens: %d", len(all))
	}
	// Garden-only membership does not list the company.
	if cs, _ := st.CompaniesOfUser(bob.ID); len(cs) != 1 || cs[0].ID != c1.ID {
		t.Errorf("CompaniesOfUser(bob) = %+v", cs)
	}
}

func TestAccess(t *testing.T) {
	st := mustOpenStore(t)
	owner := mustUser(t, st, "owner")
	gardener := mustUser(t, st, "gardener")
	c := mustCompany(t, st, owner, "c")
	other := mustCompany(t, st, owner, "other")
	g := mustGarden(t, st, c, "g")
	mustGarden(t, st, c, "g2")
	og := mustGarden(t, st, other, "og")
	if _, err := st.SetGardenPermission(g.ID, owner.ID, "gardener", store.LevelAdmin); err != nil {
		t.Fatal(err)
	}

	_, a, err := st.CompanyAccess(c.ID, gardener.ID)
	if err != nil || a != (store.Access{GardenMember: true}) {
		t.Errorf("gardener on c: %+v, %v", a, err)
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
	if err != nil || gotG.ID != g.ID || a.Garden != store.LevelAdmin || a.Company != "" {
		t.Errorf("GardenAccess = %+v %+v %v", gotG, a, err)
	}
	_, _, err = st.GardenAccess(c.ID, og.ID, owner.ID)
	wantErr(t, err, store.ErrNotFound)
	_, _, err = st.CompanyAccess(999, owner.ID)
	wantErr(t, err, store.ErrNotFound)

	bed, err := st.CreateBed(g.ID, "3fa85f64-5717-4562-b3fc-2c963f66afa6", "")
	if err != nil {
		t.Fatal(err)
	}
	_, gotBed, a, err := st.BedAccess(c.ID, g.ID, bed.ID, gardener.ID)
	if err != nil || gotBed != bed || a.Garden != store.LevelAdmin {
		t.Errorf("BedAccess = %+v %+v %v", gotBed, a, err)
	}
	_, _, _, err = st.BedAccess(other.ID, og.ID, bed.ID, owner.ID)
	wantErr(t, err, store.ErrNotFound)
}

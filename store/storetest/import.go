package storetest

import (
	"bytes"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/store"
)

// sampleImport is a small source: three users, two companies (the second without an
// admin, as PlantMap allowed), a garden with an image and one without, beds,
// permissions of both kinds and widgets. Source ids start at 4 so kept ids show.
func sampleImport() store.Import {
	joined := time.Date(2022, 3, 4, 5, 6, 7, 0, time.UTC)
	last := time.Date(2023, 1, 2, 3, 4, 5, 123456000, time.UTC)
	return store.Import{
		Source: "test",
		Users: []store.ImportUser{
			{Key: 4, Username: "Admin", FirstName: "A", LastName: "D", Email: "a@x.de", PwdHash: "pbkdf2_sha256$1$s$h", DateJoined: joined, LastLogin: &last, SiteAdmin: true},
			{Key: 5, Username: "gardener", FirstName: "", LastName: "", PwdHash: "!"},
			{Key: 7, Username: "GARDENER", FirstName: "G", LastName: "G", PwdHash: "!"},
		},
		Companies: []store.ImportCompany{{Key: 4, Name: "co-4"}, {Key: 9, Name: "co-9"}},
		Gardens: []store.ImportGarden{
			{Key: 4, Company: 4, Name: "g-4", HasImage: true, Coordinates: corners},
			{Key: 5, Company: 9, Name: "g-5"},
		},
		Beds: []store.ImportBed{
			{Key: 11, Garden: 4, UUID: "e1ef73b1258b475a996d2b72924c27ac"},
			{Key: 12, Garden: 5, UUID: "e1ef73b1258b475a996d2b72924c27ac"},
		},
		CompanyPerms: []store.ImportPermission{{Key: 4, On: 4, User: 4, Level: store.LevelAdmin}, {Key: 6, On: 4, User: 5, Level: store.LevelUser}},
		GardenPerms:  []store.ImportPermission{{Key: 8, On: 5, User: 7, Level: store.LevelUser}},
		Widgets:      []store.ImportWidget{{Key: 1, User: 4, Doc: []byte(`{"widgets":["3d-map"]}`)}},
	}
}

func plan(t *testing.T, st store.Importer, in store.Import) store.ImportPlan {
	t.Helper()
	p, err := st.PlanImport(in)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func problems(p store.ImportPlan) string {
	var out []string
	for _, x := range p.Problems {
		sev := "error"
		if x.Warning {
			sev = "warning"
		}
		out = append(out, sev+" "+string(x.Kind)+" "+strconv.FormatUint(x.Key, 10)+": "+x.Message)
	}
	return strings.Join(out, "\n")
}

// testImportKeepsIDsAndRerunsToNothing: into an empty database every record keeps its
// source id and its values; a second run finds everything imported and writes nothing.
func testImportKeepsIDsAndRerunsToNothing(t *testing.T, h Harness) {
	st, _ := open(t, h)
	in := sampleImport()
	p := plan(t, st, in)
	if p.Errors() {
		t.Fatalf("problems:\n%s", problems(p))
	}
	// Warned: the case twins, and the company nobody administers.
	if len(p.Problems) != 2 {
		t.Errorf("problems:\n%s", problems(p))
	}
	for _, k := range store.ImportKinds {
		if kp := p.Kinds[k]; len(kp.Already) != 0 || len(kp.Skipped) != 0 || k != store.ImportWidgets && !kp.KeepIDs {
			t.Errorf("%s: %+v", k, kp)
		}
	}
	if got := p.NewGardensWithImage(in); !slices.Equal(got, []uint64{4}) {
		t.Fatalf("gardens needing an image: %v", got)
	}
	if _, err := st.ApplyImport(in, p, map[uint64]string{4: "images/0123456789abcdef0123456789abcdef.png"}); err != nil {
		t.Fatal(err)
	}

	u, err := st.UserByUsername("Admin")
	if err != nil || u.ID != 4 || u.PasswordHash != "pbkdf2_sha256$1$s$h" || !u.SiteAdmin || u.Email != "a@x.de" ||
		!u.DateJoined.Equal(in.Users[0].DateJoined) || u.LastLogin == nil || !u.LastLogin.Equal(*in.Users[0].LastLogin) {
		t.Fatalf("Admin: %+v %v", u, err)
	}
	if g, _ := st.UserByUsername("gardener"); g.ID != 5 || g.FirstName != "" || g.LastLogin != nil {
		t.Errorf("gardener: %+v", g)
	}
	if c, err := st.Company(9); err != nil || c.Name != "co-9" {
		t.Errorf("company 9: %+v %v", c, err)
	}
	path, cs, err := st.GardenImage(4)
	if err != nil || path != "images/0123456789abcdef0123456789abcdef.png" || len(cs) != 3 {
		t.Errorf("garden 4 image: %q %v %v", path, cs, err)
	}
	if b, err := st.Bed(5, 12); err != nil || b.UUID != in.Beds[1].UUID {
		t.Errorf("bed 12: %+v %v", b, err)
	}
	perms, _ := st.ListPermissions()
	if len(perms.Company) != 2 || perms.Company[0].ID != 4 || perms.Company[1].ID != 6 || perms.Company[1].Username != "gardener" ||
		len(perms.Garden) != 1 || perms.Garden[0].ID != 8 || perms.Garden[0].Username != "GARDENER" {
		t.Errorf("permissions %+v", perms)
	}
	if gs, _ := st.GardensVisibleTo(7); len(gs) != 1 || gs[0].ID != 5 {
		t.Errorf("GARDENER sees %v", gs)
	}
	if w, _ := st.Widgets(4); !bytes.Equal(w, in.Widgets[0].Doc) {
		t.Errorf("widgets %s", w)
	}

	// New records continue after the kept ids.
	c, err := st.CreateCompany(4, "native")
	if err != nil || c.ID != 10 {
		t.Errorf("next company: %+v %v", c, err)
	}
	if _, err := st.CreateUser(store.NewUser{Username: "new", FirstName: "N", LastName: "N", PasswordHash: "x"}); err != nil {
		t.Fatal(err)
	}
	if nu, _ := st.UserByUsername("new"); nu.ID != 8 {
		t.Errorf("next user id %d", nu.ID)
	}

	// Again: everything is there already; nothing is written.
	before := export(t, st)
	p2 := plan(t, st, in)
	for _, k := range store.ImportKinds {
		if kp := p2.Kinds[k]; len(kp.New) != 0 || len(kp.Skipped) != 0 {
			t.Errorf("second run, %s: %+v", k, kp)
		}
	}
	if p2.HasNew() || len(p2.Problems) != 0 {
		t.Errorf("second run: new records or problems:\n%s", problems(p2))
	}
	if _, err := st.ApplyImport(in, p2, nil); err != nil {
		t.Fatal(err)
	}
	if after := export(t, st); !bytes.Equal(Records(before), Records(after)) {
		t.Errorf("the second run changed the database:\n%s\nbecame\n%s", before, after)
	}
}

// testImportIntoUsedDatabase: where gardend has records of a kind already, the source
// ids of that kind are mapped to fresh ones; a taken username stops the import, one
// differing in case is a warning; records deleted since an earlier import stay gone.
func testImportIntoUsedDatabase(t *testing.T, h Harness) {
	st, _ := open(t, h)
	owner := mustUser(t, st, "admin") // id 1; "Admin" differs only in case
	mustCompany(t, st, owner, "native co")

	in := sampleImport()
	p := plan(t, st, in)
	if p.Errors() || !strings.Contains(problems(p), `"Admin" looks like gardend's user "admin" but for case`) {
		t.Fatalf("problems:\n%s", problems(p))
	}
	users, companies, gardens := p.Kinds[store.ImportUsers], p.Kinds[store.ImportCompanies], p.Kinds[store.ImportGardens]
	if users.KeepIDs || users.IDs[4] != 2 || users.IDs[7] != 4 || companies.KeepIDs || companies.IDs[9] != 3 || !gardens.KeepIDs {
		t.Fatalf("ids: users %+v companies %+v gardens %+v", users, companies, gardens)
	}
	if _, err := st.ApplyImport(in, p, map[uint64]string{4: "images/0123456789abcdef0123456789abcdef.png"}); err != nil {
		t.Fatal(err)
	}
	if u, _ := st.UserByUsername("Admin"); u.ID != 2 {
		t.Errorf("Admin got id %d", u.ID)
	}
	if g, _ := st.Garden(4); g.Company != 2 {
		t.Errorf("garden 4 belongs to company %d, want the mapped 2", g.Company)
	}

	// A company deleted after the import is not brought back, nor is what hung off it.
	if _, err := st.DeleteCompany(2); err != nil {
		t.Fatal(err)
	}
	p2 := plan(t, st, in)
	if p2.HasNew() {
		t.Errorf("re-import after a deletion would write: %+v", p2.Kinds)
	}
	for _, check := range []struct {
		kind store.ImportKind
		key  uint64
		want string
	}{
		{store.ImportCompanies, 4, "deleted in gardend since"},
		{store.ImportGardens, 4, "deleted in gardend since"},
		{store.ImportBeds, 11, "deleted in gardend since"},
		{store.ImportCompanyPerms, 6, "deleted in gardend since"},
	} {
		if why := p2.Kinds[check.kind].Skipped[check.key]; !strings.Contains(why, check.want) {
			t.Errorf("%s %d: skipped because %q", check.kind, check.key, why)
		}
	}

	// A username gardend has (not from this source) stops a new source's import.
	other := sampleImport()
	other.Source = "another"
	p3 := plan(t, st, other)
	if !p3.Errors() || !strings.Contains(problems(p3), `username "Admin" is taken`) {
		t.Fatalf("problems:\n%s", problems(p3))
	}
	if _, err := st.ApplyImport(other, p3, nil); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("applying a plan with errors: %v", err)
	}
}

// testImportValidation: every record breaking gardend's rules is reported with its
// kind and source id, and nothing is written.
func testImportValidation(t *testing.T, h Harness) {
	st, _ := open(t, h)
	in := sampleImport()
	in.Users = append(in.Users, store.ImportUser{Key: 20, Username: "bad name!", PwdHash: "!"}, store.ImportUser{Key: 21, Username: "Admin", PwdHash: "!"}, store.ImportUser{Key: 22, Username: "nohash"})
	in.Companies = append(in.Companies, store.ImportCompany{Key: 20, Name: " "}, store.ImportCompany{Key: 21, Name: strings.Repeat("x", 129)})
	in.Gardens = append(in.Gardens,
		store.ImportGarden{Key: 20, Company: 99, Name: "orphan"},
		store.ImportGarden{Key: 21, Company: 4, Name: "bad corners", HasImage: true, Coordinates: store.Coordinates{{Name: "top_left", Latitude: 91, Longitude: 0}}})
	in.Beds = append(in.Beds, store.ImportBed{Key: 20, Garden: 4, UUID: "not/a/uuid"}, store.ImportBed{Key: 21, Garden: 4, UUID: in.Beds[0].UUID}, store.ImportBed{Key: 11, Garden: 5, UUID: "abc"})
	in.CompanyPerms = append(in.CompanyPerms, store.ImportPermission{Key: 20, On: 4, User: 99, Level: "a"}, store.ImportPermission{Key: 21, On: 9, User: 5, Level: "x"})
	in.Widgets = append(in.Widgets, store.ImportWidget{Key: 2, User: 4, Doc: []byte(`{}`)}, store.ImportWidget{Key: 3, User: 5, Doc: []byte(`{`)})
	p := plan(t, st, in)
	want := []string{
		"error users 20: username may contain only",
		"error users 21: username \"Admin\" is also the username of the user with id 4",
		"error users 22: the password hash is missing",
		"error companies 20: name is required",
		"error companies 21: name must be at most 128 characters",
		"error gardens 20: its company 99 is not in the import",
		"error gardens 21: coordinates must include top_left, top_right and bottom_left",
		"coordinates[0].latitude must be between -90 and 90",
		"error beds 20: uuid must be",
		"error beds 21: bed 11 of the same garden has project",
		"error beds 11: the id appears twice",
		"error company permissions 20: its user 99 is not in the import",
		"error company permissions 21: permission must be 'u' or 'a'",
		"error widgets 2: widgets 1 belong to the same user",
		"error widgets 3: the document is not valid JSON",
	}
	got := problems(p)
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("missing problem %q in:\n%s", w, got)
		}
	}
	if _, err := st.ApplyImport(in, p, nil); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("apply: %v", err)
	}
	if us, _ := st.ListUsers(); len(us) != 0 {
		t.Errorf("%d users written by a refused import", len(us))
	}
}

// testImportStalePlan: a plan made before the database changed is not applied.
func testImportStalePlan(t *testing.T, h Harness) {
	st, _ := open(t, h)
	in := sampleImport()
	p := plan(t, st, in)
	mustUser(t, st, "meanwhile")
	if _, err := st.ApplyImport(in, p, map[uint64]string{4: "images/0123456789abcdef0123456789abcdef.png"}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("stale plan: %v", err)
	}
}

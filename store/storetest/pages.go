package storetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gardend/gardend/store"
)

// testListPages: every paged listing, read page by page at each page size, gives the
// whole list in the same order, and a page after the last id is empty.
func testListPages(t *testing.T, h Harness) {
	st, _ := open(t, h)
	owner := mustUser(t, st, "owner")
	bob := mustUser(t, st, "bob")
	var companies []store.Company
	var gardens []store.Garden
	for i := range 5 {
		c := mustCompany(t, st, owner, fmt.Sprintf("c%d", i))
		companies = append(companies, c)
		for j := range 3 {
			gardens = append(gardens, mustGarden(t, st, c, fmt.Sprintf("g%d.%d", i, j)))
		}
	}
	// bob: member of companies 1 and 3, garden member of gardens in 0, 1 and 4, so that
	// both sources of his gardens interleave.
	for _, c := range []store.Company{companies[1], companies[3]} {
		if _, err := st.SetCompanyPermission(c.ID, owner.ID, "bob", store.LevelUser); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range []store.Garden{gardens[1], gardens[4], gardens[12], gardens[14]} {
		if _, err := st.SetGardenPermission(g.ID, owner.ID, "bob", store.LevelUser); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 4 {
		u := mustUser(t, st, fmt.Sprintf("member%d", i))
		if _, err := st.SetCompanyPermission(companies[2].ID, owner.ID, u.Username, store.LevelUser); err != nil {
			t.Fatal(err)
		}
		if _, err := st.SetGardenPermission(gardens[7].ID, owner.ID, u.Username, store.LevelUser); err != nil {
			t.Fatal(err)
		}
	}

	c2, g7 := companies[2].ID, gardens[7].ID
	companyLists := map[string]func(p store.Page) ([]store.Company, error){
		"Companies":       st.CompaniesPage,
		"CompaniesOfUser": func(p store.Page) ([]store.Company, error) { return st.CompaniesOfUserPage(bob.ID, p) },
	}
	companyWhole := map[string]func() ([]store.Company, error){
		"Companies":       st.Companies,
		"CompaniesOfUser": func() ([]store.Company, error) { return st.CompaniesOfUser(bob.ID) },
	}
	for name, page := range companyLists {
		checkPages(t, name, page, companyWhole[name], func(c store.Company) uint64 { return c.ID })
	}
	gardenLists := map[string]struct {
		page  func(p store.Page) ([]store.Garden, error)
		whole func() ([]store.Garden, error)
	}{
		"Gardens": {st.GardensPage, st.Gardens},
		"GardensVisibleTo": {func(p store.Page) ([]store.Garden, error) { return st.GardensVisibleToPage(bob.ID, p) },
			func() ([]store.Garden, error) { return st.GardensVisibleTo(bob.ID) }},
		"GardensOfCompany": {func(p store.Page) ([]store.Garden, error) { return st.GardensOfCompanyPage(c2, p) },
			func() ([]store.Garden, error) { return st.GardensOfCompany(c2) }},
		"CompanyGardensVisibleTo(member)": {func(p store.Page) ([]store.Garden, error) {
			return st.CompanyGardensVisibleToPage(companies[1].ID, bob.ID, p)
		},
			func() ([]store.Garden, error) { return st.CompanyGardensVisibleTo(companies[1].ID, bob.ID) }},
		"CompanyGardensVisibleTo(garden member)": {func(p store.Page) ([]store.Garden, error) {
			return st.CompanyGardensVisibleToPage(companies[4].ID, bob.ID, p)
		},
			func() ([]store.Garden, error) { return st.CompanyGardensVisibleTo(companies[4].ID, bob.ID) }},
	}
	for name, l := range gardenLists {
		checkPages(t, name, l.page, l.whole, func(g store.Garden) uint64 { return g.ID })
	}
	permLists := map[string]struct {
		page  func(p store.Page) ([]store.Permission, error)
		whole func() ([]store.Permission, error)
	}{
		"CompanyPermissions": {func(p store.Page) ([]store.Permission, error) { return st.CompanyPermissionsPage(c2, p) },
			func() ([]store.Permission, error) { return st.CompanyPermissions(c2) }},
		"GardenPermissions": {func(p store.Page) ([]store.Permission, error) { return st.GardenPermissionsPage(g7, p) },
			func() ([]store.Permission, error) { return st.GardenPermissions(g7) }},
	}
	for name, l := range permLists {
		checkPages(t, name, l.page, l.whole, func(p store.Permission) uint64 { return p.ID })
	}

	_, err := st.GardensOfCompanyPage(999, store.Page{Limit: 2})
	wantErr(t, err, store.ErrNotFound)
	_, err = st.CompanyPermissionsPage(999, store.Page{Limit: 2})
	wantErr(t, err, store.ErrNotFound)
	_, err = st.GardenPermissionsPage(999, store.Page{Limit: 2})
	wantErr(t, err, store.ErrNotFound)
}

// checkPages reads the list through page at every page size and compares it with the
// whole list (non-empty, by ascending id).
func checkPages[T any](t *testing.T, name string, page func(store.Page) ([]T, error), whole func() ([]T, error), id func(T) uint64) {
	t.Helper()
	all, err := whole()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(all) < 2 || !slices.IsSortedFunc(all, func(a, b T) int { return int(id(a)) - int(id(b)) }) {
		t.Fatalf("%s: the whole list %v is too short or not by id", name, all)
	}
	for size := 1; size <= len(all)+1; size++ {
		var got []T
		p := store.Page{Limit: size}
		for {
			part, err := page(p)
			if err != nil {
				t.Fatalf("%s, pages of %d: %v", name, size, err)
			}
			if len(part) > size {
				t.Fatalf("%s, pages of %d: a page of %d", name, size, len(part))
			}
			got = append(got, part...)
			if len(part) < size {
				break
			}
			p.After = id(part[len(part)-1])
		}
		if fmt.Sprint(got) != fmt.Sprint(all) {
			t.Errorf("%s in pages of %d = %v, want %v", name, size, got, all)
		}
	}
	if part, err := page(store.Page{After: id(all[len(all)-1]), Limit: 3}); err != nil || len(part) != 0 {
		t.Errorf("%s after the last: %v, %v", name, part, err)
	}
	if part, err := page(store.Page{After: ^uint64(0), Limit: 3}); err != nil || len(part) != 0 {
		t.Errorf("%s after the highest id: %v, %v", name, part, err)
	}
}

package server_test

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/store"
)

func gardenIDsOf(t *testing.T, res response) []uint64 {
	t.Helper()
	var gs []store.Garden
	res.decode(t, &gs)
	ids := make([]uint64, len(gs))
	for i, g := range gs {
		ids[i] = g.ID
	}
	return ids
}

func TestCompaniesAndGardens(t *testing.T) {
	ts := newTestServer(t)
	alice, bob, root := ts.register("alice"), ts.register("bob"), ts.siteAdmin("root")

	res := ts.must(http.StatusCreated, "POST", "/companies", alice, map[string]string{"name": "Green Roofs"})
	if string(res.body) != `{"id":1,"name":"Green Roofs"}` {
		t.Errorf("created company %s", res.body)
	}
	c2 := ts.createCompany(bob, "Bob's")
	res = ts.must(http.StatusCreated, "POST", "/companies/1/gardens", alice, map[string]string{"name": "Roof A"})
	if string(res.body) != `{"id":1,"name":"Roof A","image_path":null,"company":1}` {
		t.Errorf("created garden %s", res.body)
	}
	ts.createGarden(alice, 1, "Roof B")
	ts.createGarden(bob, c2.ID, "Yard")

	for _, body := range []any{map[string]string{}, map[string]string{"name": " "}, map[string]string{"name": strings.Repeat("x", 129)}, map[string]int{"name": 3}, "[]"} {
		ts.must(http.StatusBadRequest, "POST", "/companies", alice, body)
		ts.must(http.StatusBadRequest, "POST", "/companies/1/gardens", alice, body)
	}

	res = ts.must(http.StatusOK, "GET", "/companies", alice, nil)
	if string(res.body) != `[{"id":1,"name":"Green Roofs"}]` {
		t.Errorf("alice's companies %s", res.body)
	}
	ts.must(http.StatusOK, "GET", "/companies/1", alice, nil)
	if got := string(ts.must(http.StatusOK, "GET", "/companies", ts.register("carol"), nil).body); got != "[]" {
		t.Errorf("no companies: %s, want []", got)
	}
	var all []store.Company
	ts.must(http.StatusOK, "GET", "/companies", root, nil).decode(t, &all)
	if len(all) != 2 {
		t.Errorf("site admin sees %v", all)
	}
	if ids := gardenIDsOf(t, ts.must(http.StatusOK, "GET", "/gardens", root, nil)); !slices.Equal(ids, []uint64{1, 2, 3}) {
		t.Errorf("site admin's gardens %v", ids)
	}

	// bob, a garden member of garden 2 only: sees company 1 and that garden, and the
	// company is not in his company list.
	ts.grant(alice, 1, 2, "bob", store.LevelUser)
	ts.must(http.StatusOK, "GET", "/companies/1", bob, nil)
	if ids := gardenIDsOf(t, ts.must(http.StatusOK, "GET", "/companies/1/gardens", bob, nil)); !slices.Equal(ids, []uint64{2}) {
		t.Errorf("bob's gardens of company 1: %v", ids)
	}
	if ids := gardenIDsOf(t, ts.must(http.StatusOK, "GET", "/companies/1/gardens", alice, nil)); !slices.Equal(ids, []uint64{1, 2}) {
		t.Errorf("alice's gardens of company 1: %v", ids)
	}
	if ids := gardenIDsOf(t, ts.must(http.StatusOK, "GET", "/gardens", bob, nil)); !slices.Equal(ids, []uint64{2, 3}) {
		t.Errorf("bob's gardens: %v", ids)
	}
	ts.must(http.StatusNotFound, "GET", "/companies/1/gardens/1", bob, nil)
	ts.must(http.StatusNotFound, "GET", "/companies/2/gardens/1", alice, nil)
	ts.must(http.StatusNotFound, "GET", "/companies/2/gardens/1", root, nil)
	res = ts.must(http.StatusMethodNotAllowed, "PUT", "/companies/1", alice, map[string]string{})
	if !strings.Contains(res.header.Get("Allow"), "DELETE") {
		t.Errorf("Allow: %q", res.header.Get("Allow"))
	}
}

// TestGardensListedOnce: a garden visible through a company permission and a garden
// permission appears once.
func TestGardensListedOnce(t *testing.T) {
	ts := newTestServer(t)
	alice, bob := ts.register("alice"), ts.register("bob")
	c := ts.createCompany(alice, "c")
	g1 := ts.createGarden(alice, c.ID, "g1")
	g2 := ts.createGarden(alice, c.ID, "g2")
	ts.grant(alice, c.ID, 0, "bob", store.LevelUser)
	ts.grant(alice, c.ID, g1.ID, "bob", store.LevelAdmin)
	if ids := gardenIDsOf(t, ts.must(http.StatusOK, "GET", "/gardens", bob, nil)); !slices.Equal(ids, []uint64{g1.ID, g2.ID}) {
		t.Errorf("bob's gardens %v", ids)
	}
	if ids := gardenIDsOf(t, ts.must(http.StatusOK, "GET", companyPath(c.ID)+"/gardens", bob, nil)); !slices.Equal(ids, []uint64{g1.ID, g2.ID}) {
		t.Errorf("bob's gardens of c %v", ids)
	}
}

func TestBeds(t *testing.T) {
	ts := newTestServer(t)
	alice := ts.register("alice")
	c := ts.createCompany(alice, "c")
	g := ts.createGarden(alice, c.ID, "g")
	other := ts.createGarden(alice, c.ID, "other")
	beds := gardenPath(c.ID, g.ID) + "/beds"
	const uuid = "3fa85f64-5717-4562-b3fc-2c963f66afa6"

	res := ts.must(http.StatusCreated, "POST", beds, alice, map[string]string{"uuid": uuid, "name": "north"})
	if string(res.body) != `{"id":1,"uuid":"`+uuid+`","name":"north"}` {
		t.Errorf("created bed %s", res.body)
	}
	res = ts.must(http.StatusBadRequest, "POST", beds, alice, map[string]string{"uuid": uuid})
	if detail, _ := res.problem(t); !strings.Contains(detail, "already has a bed") {
		t.Errorf("duplicate detail %q", detail)
	}
	res = ts.must(http.StatusBadRequest, "POST", beds, alice, map[string]string{"uuid": "not a uuid"})
	if _, fields := res.problem(t); !strings.Contains(fields["uuid"], "SEEREP") {
		t.Errorf("uuid message %q", fields["uuid"])
	}
	ts.must(http.StatusBadRequest, "POST", beds, alice, map[string]string{"name": "no uuid"})
	ts.must(http.StatusCreated, "POST", gardenPath(c.ID, other.ID)+"/beds", alice, map[string]string{"uuid": uuid})

	ts.must(http.StatusNotFound, "DELETE", gardenPath(c.ID, other.ID)+"/beds/1", alice, nil)
	res = ts.must(http.StatusOK, "DELETE", beds+"/1", alice, nil)
	if string(res.body) != "{}" {
		t.Errorf("delete answer %s", res.body)
	}
	ts.must(http.StatusNotFound, "DELETE", beds+"/1", alice, nil)
}

// TestDeleteCompanyCascade deletes a company with everything under it and expects no
// record of it in any bucket and no image file left.
func TestDeleteCompanyCascade(t *testing.T) {
	ts := newTestServer(t)
	alice, bob := ts.register("alice"), ts.register("bob")
	c := ts.createCompany(alice, "c")
	var gardens []store.Garden
	for _, name := range []string{"g1", "g2"} {
		g := ts.createGarden(alice, c.ID, name)
		gardens = append(gardens, g)
		ts.grant(alice, c.ID, g.ID, "bob", store.LevelAdmin)
		ts.must(http.StatusCreated, "POST", gardenPath(c.ID, g.ID)+"/image", alice, upload(dataURL(fixture(t, "garden.png")), cornersJSON))
		ts.must(http.StatusCreated, "POST", gardenPath(c.ID, g.ID)+"/beds", alice, map[string]string{"uuid": "bed-of-" + name})
	}
	ts.grant(alice, c.ID, 0, "bob", store.LevelUser)
	imageDir := filepath.Join(ts.cfg.DataDir, server.ImageDirName)
	if entries, _ := os.ReadDir(imageDir); len(entries) != 2 {
		t.Fatalf("%d image files before the delete", len(entries))
	}

	ts.must(http.StatusForbidden, "DELETE", companyPath(c.ID), bob, nil)
	res := ts.must(http.StatusOK, "DELETE", companyPath(c.ID), alice, nil)
	if string(res.body) != "{}" {
		t.Errorf("answer %s", res.body)
	}
	ts.must(http.StatusNotFound, "GET", companyPath(c.ID), alice, nil)
	ts.must(http.StatusNotFound, "DELETE", companyPath(c.ID), alice, nil)
	if entries, _ := os.ReadDir(imageDir); len(entries) != 0 {
		t.Errorf("image files left: %v", entries)
	}

	st := ts.store()
	if _, err := st.Company(c.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("company: %v", err)
	}
	for _, g := range gardens {
		if _, err := st.Garden(g.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("garden %d: %v", g.ID, err)
		}
		if _, err := st.BedsOfGarden(g.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("beds of garden %d: %v", g.ID, err)
		}
		if _, _, err := st.GardenImage(g.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("image of garden %d: %v", g.ID, err)
		}
	}
	for _, name := range []string{"alice", "bob"} {
		if gs, _ := st.GardensVisibleTo(ts.userID(name)); len(gs) != 0 {
			t.Errorf("%s still sees %v", name, gs)
		}
	}
	stats, err := st.Stats()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range stats.Buckets {
		switch b.Name {
		case "meta", "users", "usernames", "username_looks", "tokens", "user_tokens", "widgets":
		default:
			if b.Keys != 0 {
				t.Errorf("bucket %s keeps %d keys", b.Name, b.Keys)
			}
		}
	}
}

func TestDeleteGarden(t *testing.T) {
	ts := newTestServer(t)
	alice, bob := ts.register("alice"), ts.register("bob")
	c := ts.createCompany(alice, "c")
	g := ts.createGarden(alice, c.ID, "g")
	kept := ts.createGarden(alice, c.ID, "kept")
	ts.grant(alice, c.ID, g.ID, "bob", store.LevelAdmin)
	ts.must(http.StatusCreated, "POST", gardenPath(c.ID, g.ID)+"/image", alice, upload(dataURL(fixture(t, "garden.png")), cornersJSON))

	// A garden admin may delete the garden.
	ts.must(http.StatusOK, "DELETE", gardenPath(c.ID, g.ID), bob, nil)
	ts.must(http.StatusNotFound, "GET", gardenPath(c.ID, g.ID), alice, nil)
	if entries, _ := os.ReadDir(filepath.Join(ts.cfg.DataDir, server.ImageDirName)); len(entries) != 0 {
		t.Errorf("image files left: %v", entries)
	}
	if ids := gardenIDsOf(t, ts.must(http.StatusOK, "GET", companyPath(c.ID)+"/gardens", alice, nil)); !slices.Equal(ids, []uint64{kept.ID}) {
		t.Errorf("gardens left %v", ids)
	}
	// bob's only permission went with the garden.
	ts.must(http.StatusNotFound, "GET", companyPath(c.ID), bob, nil)
}

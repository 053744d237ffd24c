package storetest

import (
	"slices"
	"strings"
	"testing"

	"github.com/gardend/gardend/store"
)

func testBeds(t *testing.T, h Harness) {
	st, _ := open(t, h)
	alice := mustUser(t, st, "alice")
	c := mustCompany(t, st, alice, "c")
	g := mustGarden(t, st, c, "g")
	g2 := mustGarden(t, st, c, "g2")

	a, err := st.CreateBed(g.ID, uuidA, "north")
	if err != nil {
		t.Fatal(err)
	}
	if a.ID == 0 || a.Garden != g.ID || a.UUID != uuidA || a.Name != "north" {
		t.Errorf("bed %+v", a)
	}
	b, err := st.CreateBed(g.ID, uuidB, "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.CreateBed(g.ID, uuidA, "again")
	wantErr(t, err, store.ErrConflict)
	// Another garden may use the same project.
	shared, err := st.CreateBed(g2.ID, uuidA, "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.CreateBed(999, uuidA, "")
	wantErr(t, err, store.ErrNotFound)

	for _, bad := range []string{"", "has space", "a/b", "ü", strings.Repeat("a", 65)} {
		_, err := st.CreateBed(g.ID, bad, "")
		wantErr(t, err, store.ErrInvalid)
	}
	long, err := st.CreateBed(g.ID, strings.Repeat("a", 64), "")
	if err != nil {
		t.Errorf("64-character uuid: %v", err)
	}
	_, err = st.CreateBed(g.ID, "ok", strings.Repeat("n", 129))
	wantErr(t, err, store.ErrInvalid)

	beds, err := st.BedsOfGarden(g.ID)
	if err != nil || len(beds) != 3 || beds[0] != a || beds[1] != b || beds[2] != long {
		t.Errorf("BedsOfGarden = %+v, %v", beds, err)
	}
	_, err = st.BedsOfGarden(999)
	wantErr(t, err, store.ErrNotFound)
	if got, err := st.Bed(g.ID, a.ID); err != nil || got != a {
		t.Errorf("Bed = %+v, %v", got, err)
	}
	_, err = st.Bed(g2.ID, a.ID)
	wantErr(t, err, store.ErrNotFound)
	_, err = st.Bed(g.ID, 999)
	wantErr(t, err, store.ErrNotFound)
	_, err = st.DeleteBed(g2.ID, a.ID)
	wantErr(t, err, store.ErrNotFound)
	if all, err := st.Beds(); err != nil || len(all) != 4 || all[0] != a || all[1] != b || all[2] != shared {
		t.Errorf("Beds = %+v, %v", all, err)
	}

	// uuidA is still used by g2's bed: nothing to drop yet.
	r, err := st.DeleteBed(g.ID, a.ID)
	if err != nil || len(r.BedUUIDs) != 0 || len(r.ImagePaths) != 0 {
		t.Errorf("DeleteBed = %+v, %v", r, err)
	}
	r, err = st.DeleteBed(g2.ID, shared.ID)
	if err != nil || !slices.Equal(r.BedUUIDs, []string{uuidA}) {
		t.Errorf("DeleteBed of the last user of the project = %+v, %v", r, err)
	}
	// The uuid is free again in g.
	if _, err := st.CreateBed(g.ID, uuidA, ""); err != nil {
		t.Errorf("re-adding a removed uuid: %v", err)
	}
}

func testGardenImage(t *testing.T, h Harness) {
	st, _ := open(t, h)
	alice := mustUser(t, st, "alice")
	c := mustCompany(t, st, alice, "c")
	g := mustGarden(t, st, c, "g")

	_, _, err := st.GardenImage(g.ID)
	wantErr(t, err, store.ErrNotFound)
	old, err := st.SetGardenImage(g.ID, "images/a.png", corners)
	if err != nil || old != "" {
		t.Fatalf("first SetGardenImage = %q, %v", old, err)
	}
	swapped := slices.Clone(corners)
	slices.Reverse(swapped)
	swapped = append(swapped, store.Coordinate{Name: "centre", Latitude: -90, Longitude: 180})
	old, err = st.SetGardenImage(g.ID, "images/b.png", swapped)
	if err != nil || old != "images/a.png" {
		t.Fatalf("second SetGardenImage = %q, %v", old, err)
	}
	path, cs, err := st.GardenImage(g.ID)
	if err != nil || path != "images/b.png" || !slices.Equal(cs, swapped) {
		t.Errorf("GardenImage = %q, %+v, %v", path, cs, err)
	}
	if got, _ := st.Garden(g.ID); got.ImagePath == nil || *got.ImagePath != "images/b.png" {
		t.Errorf("garden %+v", got)
	}
	paths, err := st.ImagePaths()
	if err != nil || len(paths) != 1 || !paths["images/b.png"] {
		t.Errorf("ImagePaths = %v, %v", paths, err)
	}

	// Invalid input changes nothing.
	_, err = st.SetGardenImage(g.ID, "images/c.png", corners[:2])
	wantErr(t, err, store.ErrInvalid)
	_, err = st.SetGardenImage(g.ID, "", corners)
	wantErr(t, err, store.ErrInvalid)
	_, err = st.SetGardenImage(999, "images/c.png", corners)
	wantErr(t, err, store.ErrNotFound)
	if path, cs, _ := st.GardenImage(g.ID); path != "images/b.png" || len(cs) != 4 {
		t.Errorf("image after failed updates: %q %v", path, cs)
	}
}

package store_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gardend/gardend/store"
)

const (
	uuidA = "3fa85f64-5717-4562-b3fc-2c963f66afa6"
	uuidB = "c56a4180-65aa-42ec-a945-5fd21dec0538"
)

func TestBeds(t *testing.T) {
	st := mustOpenStore(t)
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
	if _, err := st.CreateBed(g.ID, strings.Repeat("a", 64), ""); err != nil {
		t.Errorf("64-character uuid: %v", err)
	}
	_, err = st.CreateBed(g.ID, "ok", strings.Repeat("n", 129))
	wantErr(t, err, store.ErrInvalid)

	beds, err := st.BedsOfGarden(g.ID)
	if err != nil || len(beds) != 3 || beds[0] != a || beds[1] != b {
		t.Errorf("BedsOfGarden = %+v, %v", beds, err)
	}
	if got, err := st.Bed(g.ID, a.ID); err != nil || got != a {
		t.Errorf("Bed = %+v, %v", got, err)
	}
	_, err = st.Bed(g2.ID, a.ID)
	wantErr(t, err, store.ErrNotFound)
	_, err = st.DeleteBed(g2.ID, a.ID)
	wantErr(t, err, store.ErrNotFound)

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

func TestCreateBedUpTo(t *testing.T) {
	st := mustOpenStore(t)
	alice := mustUser(t, st, "alice")
	c := mustCompany(t, st, alice, "c")
	g := mustGarden(t, st, c, "g")
	other := mustGarden(t, st, c, "other")
	uuid := func(i int) string { return fmt.Sprintf("3fa85f64-5717-4562-b3fc-%012d", i) }
	for i := range 3 {
		if _, err := st.CreateBedUpTo(g.ID, uuid(i), "", 3); err != nil {
			t.Fatal(err)
		}
	}
	_, err := st.CreateBedUpTo(g.ID, uuid(3), "", 3)
	wantErr(t, err, store.ErrTooManyBeds)
	wantErr(t, err, store.ErrInvalid)
	if !strings.Contains(err.Error(), "has 3, at most 3") {
		t.Errorf("message %q", err)
	}
	// Per garden; a garden already over a lowered limit keeps its beds and gets no more.
	if _, err := st.CreateBedUpTo(other.ID, uuid(0), "", 3); err != nil {
		t.Fatal(err)
	}
	_, err = st.CreateBedUpTo(g.ID, uuid(3), "", 2)
	wantErr(t, err, store.ErrTooManyBeds)
	if beds, _ := st.BedsOfGarden(g.ID); len(beds) != 3 {
		t.Fatalf("%d beds", len(beds))
	}
	// Without a limit (the operator's `gardend beds add`).
	if _, err := st.CreateBed(g.ID, uuid(3), ""); err != nil {
		t.Fatal(err)
	}
}

package storetest

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/gardend/gardend/store"
)

// testBedsOfProject: the beds of a project in every garden, by id, through the index
// by uuid; none for an unknown or malformed uuid; a deleted bed leaves it.
func testBedsOfProject(t *testing.T, h Harness) {
	st, _ := open(t, h)
	alice, bob := mustUser(t, st, "alice"), mustUser(t, st, "bob")
	g1 := mustGarden(t, st, mustCompany(t, st, alice, "c1"), "g1")
	g2 := mustGarden(t, st, mustCompany(t, st, bob, "c2"), "g2")
	a1, err := st.CreateBed(g1.ID, uuidA, "north")
	if err != nil {
		t.Fatal(err)
	}
	b1, err := st.CreateBed(g1.ID, uuidB, "")
	if err != nil {
		t.Fatal(err)
	}
	a2, err := st.CreateBed(g2.ID, uuidA, "")
	if err != nil {
		t.Fatal(err)
	}
	if beds, err := st.BedsOfProject(uuidA); err != nil || len(beds) != 2 || beds[0] != a1 || beds[1] != a2 {
		t.Errorf("BedsOfProject(A) = %+v, %v", beds, err)
	}
	if beds, err := st.BedsOfProject(uuidB); err != nil || len(beds) != 1 || beds[0] != b1 {
		t.Errorf("BedsOfProject(B) = %+v, %v", beds, err)
	}
	// A prefix of a uuid is another uuid.
	for _, none := range []string{"3fa85f64", "0b5e8a1c-9999-4999-8999-999999999999", "a/b", ""} {
		if beds, err := st.BedsOfProject(none); err != nil || len(beds) != 0 {
			t.Errorf("BedsOfProject(%q) = %+v, %v", none, beds, err)
		}
	}
	if _, err := st.DeleteBed(g1.ID, a1.ID); err != nil {
		t.Fatal(err)
	}
	if beds, err := st.BedsOfProject(uuidA); err != nil || len(beds) != 1 || beds[0] != a2 {
		t.Errorf("after a deletion: %+v, %v", beds, err)
	}
}

var errRefused = errors.New("refused by the test")

// testCreateBedFor: allow sees the project's beds in other gardens with what the user
// holds on each, and its error refuses the bed with nothing written; without such
// beds it is not called.
func testCreateBedFor(t *testing.T, h Harness) {
	st, _ := open(t, h)
	alice, bob := mustUser(t, st, "alice"), mustUser(t, st, "bob")
	c1 := mustCompany(t, st, alice, "c1")
	g1 := mustGarden(t, st, c1, "g1")
	g2 := mustGarden(t, st, mustCompany(t, st, bob, "c2"), "g2")
	owned, err := st.CreateBed(g1.ID, uuidA, "")
	if err != nil {
		t.Fatal(err)
	}
	var seen []store.ProjectBed
	refuse := func(others []store.ProjectBed) error { seen = others; return errRefused }
	_, err = st.CreateBedFor(bob.ID, g2.ID, uuidA, "mine", 0, refuse)
	if !errors.Is(err, errRefused) {
		t.Fatalf("refused: %v", err)
	}
	if len(seen) != 1 || seen[0].Bed != owned || seen[0].Company != c1.ID || seen[0].Access != (store.Access{}) {
		t.Fatalf("allow saw %+v", seen)
	}
	if beds, _ := st.BedsOfProject(uuidA); len(beds) != 1 {
		t.Fatalf("a refused bed was written: %+v", beds)
	}
	if beds, _ := st.BedsOfGarden(g2.ID); len(beds) != 0 {
		t.Fatalf("a refused bed was written: %+v", beds)
	}

	// What bob holds on g1 is what allow sees.
	if _, err := st.SetGardenPermission(g1.ID, alice.ID, "bob", store.LevelAdmin); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetCompanyPermission(c1.ID, alice.ID, "bob", store.LevelUser); err != nil {
		t.Fatal(err)
	}
	_, err = st.CreateBedFor(bob.ID, g2.ID, uuidA, "", 0, refuse)
	if want := (store.Access{Company: store.LevelUser, Garden: store.LevelAdmin, GardenMember: true}); !errors.Is(err, errRefused) || len(seen) != 1 || seen[0].Access != want {
		t.Fatalf("after the grants: %v, allow saw %+v", err, seen)
	}
	b, err := st.CreateBedFor(bob.ID, g2.ID, uuidA, "mine", 0, func([]store.ProjectBed) error { return nil })
	if err != nil || b.Garden != g2.ID || b.UUID != uuidA || b.Name != "mine" {
		t.Fatalf("allowed: %+v, %v", b, err)
	}

	// Not called: a new project, a project only this garden has (a conflict), a
	// garden at its limit.
	var calls atomic.Int32
	count := func([]store.ProjectBed) error { calls.Add(1); return errRefused }
	if _, err := st.CreateBedFor(bob.ID, g2.ID, uuidB, "", 0, count); err != nil {
		t.Fatal(err)
	}
	_, err = st.CreateBedFor(bob.ID, g2.ID, uuidB, "", 0, count)
	wantErr(t, err, store.ErrConflict)
	_, err = st.CreateBedFor(alice.ID, g1.ID, bedUUID(1), "", 1, count)
	wantErr(t, err, store.ErrTooManyBeds)
	if calls.Load() != 0 {
		t.Fatalf("allow called %d times", calls.Load())
	}
}

// testFirstBedsOfOneProject: two gardens registering one new project at once, each
// refusing a project another garden has, never both succeed: the second sees the
// first's bed.
func testFirstBedsOfOneProject(t *testing.T, h Harness) {
	nodes, _ := openNodes(t, h, 2)
	alice, bob := mustUser(t, nodes[0], "alice"), mustUser(t, nodes[0], "bob")
	g1 := mustGarden(t, nodes[0], mustCompany(t, nodes[0], alice, "c1"), "g1")
	g2 := mustGarden(t, nodes[0], mustCompany(t, nodes[0], bob, "c2"), "g2")
	onlyMine := func([]store.ProjectBed) error { return errRefused }
	for round := range 8 {
		project := bedUUID(100 + round)
		var err1, err2 error
		together(
			func() { _, err1 = nodes[0].CreateBedFor(alice.ID, g1.ID, project, "", 0, onlyMine) },
			func() { _, err2 = nodes[1].CreateBedFor(bob.ID, g2.ID, project, "", 0, onlyMine) },
		)
		beds, err := nodes[0].BedsOfProject(project)
		if err != nil {
			t.Fatal(err)
		}
		if (err1 == nil) == (err2 == nil) || len(beds) != 1 {
			t.Fatalf("round %d: %v, %v; beds %+v", round, err1, err2, beds)
		}
		for _, e := range []error{err1, err2} {
			if e != nil && !errors.Is(e, errRefused) {
				t.Fatalf("round %d: %v", round, e)
			}
		}
	}
}

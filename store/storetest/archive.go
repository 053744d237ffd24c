package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/store"
)

// Fill writes one of every kind of record through the interfaces, with the shapes
// that are easy to lose on the way through an archive: a last login, a site admin,
// an e-mail, widgets that are not compact JSON, a garden with an image and one
// without, both kinds of permission with ids out of user order, positions with and
// without a transform and without a position, and queued downloads failed, backing
// off and claimed.
func Fill(tb testing.TB, st store.Backend, clock *Clock) {
	tb.Helper()
	must := func(err error) {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
	}
	ann := mustUser(tb, st, "ann")
	bob, err := st.CreateUser(store.NewUser{Username: "bob", FirstName: "Bob", LastName: "Baker", Email: "bob@example.org", PasswordHash: "$argon2id$x", SiteAdmin: true})
	must(err)
	carol := mustUser(tb, st, "carol")
	clock.Advance(time.Minute)
	must(st.CreateLoginToken(ann, store.TokenDigest(tok("ann-login")), clock.Now().Add(time.Hour)))
	_, err = st.RevokeUserTokens(carol.ID, nil) // a credentials generation to carry over
	must(err)
	must(st.CreateToken(ann.ID, store.TokenDigest(tok("ann")), clock.Now().Add(time.Hour)))
	must(st.CreateToken(bob.ID, store.TokenDigest(tok("bob")), clock.Now().Add(2*time.Hour)))
	must(st.SaveWidgets(carol.ID, []byte(" [ 1, {\"a\" : \"ß\"} ]\n")))

	c1 := mustCompany(tb, st, ann, "Green Roofs")
	c2 := mustCompany(tb, st, carol, "Allotments")
	g1 := mustGarden(tb, st, c1, "Roof 1")
	mustGarden(tb, st, c1, "Roof 2")
	g3 := mustGarden(tb, st, c2, "Plot 7")
	_, err = st.SetGardenImage(g1.ID, "images/roof.png", append(corners, store.Coordinate{Name: "centre", Latitude: 52.45, Longitude: 13.45}))
	must(err)
	_, err = st.SetCompanyPermission(c1.ID, ann.ID, "carol", store.LevelUser)
	must(err)
	_, err = st.SetCompanyPermission(c1.ID, ann.ID, "bob", store.LevelAdmin)
	must(err)
	_, err = st.SetGardenPermission(g3.ID, carol.ID, "bob", store.LevelUser)
	must(err)
	_, err = st.SetGardenPermission(g1.ID, ann.ID, "carol", store.LevelAdmin)
	must(err)
	_, err = st.CreateBed(g1.ID, uuidA, "north")
	must(err)
	_, err = st.CreateBed(g3.ID, uuidA, "")
	must(err)
	_, err = st.CreateBed(g3.ID, uuidB, "south")
	must(err)

	_, err = st.EnqueueClouds([]store.CloudJob{job(uuidA, "c1", inputsCam), job(uuidA, "c2", inputsMap),
		job(uuidA, "c3", inputsMap), job(uuidB, "c1", inputsMap), job(uuidB, "c2", inputsCam)}, time.Hour)
	must(err)
	must(st.CompleteCloudJob(store.PlantPosition{Project: uuidA, Cloud: "c1", CloudInputs: inputsCam,
		Position: &store.LatLon{Lat: 52.300001, Lon: 7.600002}, Points: 512}))
	must(st.CompleteCloudJob(store.PlantPosition{Project: uuidA, Cloud: "c2", CloudInputs: inputsMap, Reason: "no usable point"}))
	for range policy.MaxAttempts {
		_, _, err = st.RecordCloudFailure(uuidA, "c3", inputsMap, "unavailable", policy)
		must(err)
	}
	_, _, err = st.RecordCloudFailure(uuidB, "c1", inputsMap, "timeout", policy)
	must(err)
	_, _, _, err = st.ClaimCloudJobs("node-1", 1, time.Minute)
	must(err)
	// An imported user and a company that came without an admin, with their import
	// map entries; and the database's identity.
	in := store.Import{Source: "fill", Users: []store.ImportUser{{Key: 40, Username: "imported", PwdHash: "!"}},
		Companies: []store.ImportCompany{{Key: 40, Name: "Imported"}}}
	plan, err := st.PlanImport(in)
	must(err)
	_, err = st.ApplyImport(in, plan, nil)
	must(err)
	_, _, err = st.DataID()
	must(err)

	// The logbook: plant identities, a log of every shape (a removed bed's, a
	// task with an assignee, a harvest with a quantity, notes), photos with and
	// without a thumbnail.
	_, err = st.KeepPlantIDs(uuidA, []store.PlantID{{Name: "plant 2", ID: "m-2"}, {Name: "plant 1", ID: "m-1"}})
	must(err)
	clock.Advance(time.Minute)
	harvest := store.LogHarvest
	bed := mustBedOf(tb, st, g1.ID)
	h, err := st.CreateLog(g1.ID, carol.ID, store.LogPatch{Type: &harvest, Title: ptr("Tomatoes"), Notes: ptr("first\nof the year"),
		At: ptr(clock.Now().Add(-time.Hour)), Bed: &bed.ID, Plant: ptr("m-1"), Quantity: ptr(&store.Quantity{Value: 2.25, Unit: "kg"})}, nil)
	must(err)
	task := store.LogTask
	_, err = st.CreateLog(g1.ID, ann.ID, store.LogPatch{Type: &task, Title: ptr("Tie up"), At: ptr(clock.Now().Add(48 * time.Hour)), Assignee: ptr("carol")}, nil)
	must(err)
	obs := store.LogObservation
	o, _, err := st.CreateLogOnce(g3.ID, carol.ID, "a-client-key", store.LogPatch{Type: &obs, Title: ptr("Slugs"), Bed: ptr(mustBedOf(tb, st, g3.ID).ID)}, nil)
	must(err)
	_, _, err = st.AddPhotoOnce(g1.ID, h.ID, "a-photo-key", photo(1), 0, nil)
	must(err)
	p2 := photo(2)
	p2.ThumbPath, p2.ThumbSize = "", 0
	_, err = st.AddPhoto(g3.ID, o.ID, p2, 0, nil)
	must(err)
	_, err = st.DeleteBed(g3.ID, *o.Bed)
	must(err)
	fillHistory(tb, st, clock, g1, ann)
}

// mustBedOf returns the garden's first bed.
func mustBedOf(tb testing.TB, st store.Backend, gardenID uint64) store.Bed {
	tb.Helper()
	beds, err := st.BedsOfGarden(gardenID)
	if err != nil || len(beds) == 0 {
		tb.Fatalf("beds of garden %d: %v, %v", gardenID, beds, err)
	}
	return beds[0]
}

// Records is an archive without its header line (which says when it was written).
func Records(archive []byte) []byte {
	_, rest, _ := bytes.Cut(archive, []byte("\n"))
	return rest
}

func export(tb testing.TB, st store.Archiver) []byte {
	tb.Helper()
	var buf bytes.Buffer
	if err := st.Export(context.Background(), &buf); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// testArchiveRoundTrip: export, import into an empty store, export again: the same
// archive, and the imported store goes on from the imported ids.
func testArchiveRoundTrip(t *testing.T, h Harness) {
	src, clock := open(t, h)
	Fill(t, src, clock)
	first := export(t, src)
	if n := bytes.Count(first, []byte("\n")); n < 25 {
		t.Fatalf("archive of %d lines:\n%s", n, first)
	}
	if bytes.Contains(first, []byte("node-1")) {
		t.Errorf("the archive carries a node's claim")
	}
	dst, _ := openNodes(t, h, 1)
	if err := dst[0].Import(context.Background(), bytes.NewReader(first), store.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	if second := export(t, dst[0]); !bytes.Equal(Records(first), Records(second)) {
		t.Fatalf("the archive changed on the way through:\n%s\nbecame\n%s", first, second)
	}
	// Imported tokens authenticate; new records take ids after the imported ones.
	if u, err := dst[0].Authenticate(store.TokenDigest(tok("bob"))); err != nil || u.Username != "bob" || !u.SiteAdmin {
		t.Errorf("imported token: %+v, %v", u, err)
	}
	users, _ := src.ListUsers()
	dave := mustUser(t, dst[0], "dave")
	if dave.ID <= users[len(users)-1].ID {
		t.Errorf("new user id %d does not follow the imported ones", dave.ID)
	}
	companies, _ := src.Companies()
	if c := mustCompany(t, dst[0], dave, "new"); c.ID <= companies[len(companies)-1].ID {
		t.Errorf("new company id %d does not follow the imported ones", c.ID)
	}
	// The identity came along.
	srcID, _, _ := src.DataID()
	if id, made, err := dst[0].DataID(); err != nil || made || id != srcID {
		t.Errorf("identity %q (made %v, %v), want %q", id, made, err, srcID)
	}
	// Into a store that holds records: refused, nothing written.
	err := dst[0].Import(context.Background(), bytes.NewReader(first), store.ImportOptions{})
	wantErr(t, err, store.ErrConflict)
}

// testArchiveReplace: with Replace, an import into a store that holds records replaces
// them all, in one transaction: a bad archive leaves them as they were.
func testArchiveReplace(t *testing.T, h Harness) {
	src, clock := open(t, h)
	Fill(t, src, clock)
	archive := export(t, src)
	dst, _ := openNodes(t, h, 1)
	other := mustUser(t, dst[0], "zed")
	mustCompany(t, dst[0], other, "Elsewhere")
	bad := bytes.Replace(archive, []byte(`"username":"ann"`), []byte(`"username":"a n"`), 1)
	err := dst[0].Import(context.Background(), bytes.NewReader(bad), store.ImportOptions{Replace: true})
	wantErr(t, err, store.ErrInvalid)
	if u, err := dst[0].UserByUsername("zed"); err != nil || u.ID != other.ID {
		t.Fatalf("a failed replace lost the records: %+v, %v", u, err)
	}
	if err := dst[0].Import(context.Background(), bytes.NewReader(archive), store.ImportOptions{Replace: true}); err != nil {
		t.Fatal(err)
	}
	if got := export(t, dst[0]); !bytes.Equal(Records(archive), Records(got)) {
		t.Fatalf("replaced store differs:\n%s\nbecame\n%s", archive, got)
	}
	_, err = dst[0].UserByUsername("zed")
	wantErr(t, err, store.ErrNotFound)
}

// testArchiveRejects: an archive that is not one, or whose records break the rules,
// is refused whole.
func testArchiveRejects(t *testing.T, h Harness) {
	src, clock := open(t, h)
	Fill(t, src, clock)
	good := string(export(t, src))
	lines := strings.SplitAfter(good, "\n")
	header := lines[0]
	line := func(kind string) string {
		for _, l := range lines {
			if strings.HasPrefix(l, `{"kind":"`+kind+`"`) {
				return l
			}
		}
		t.Fatalf("no %s line", kind)
		return ""
	}
	user, company := line(store.KindUser), line(store.KindCompany)
	admin := line(store.KindCompanyPermission)
	cases := map[string]string{
		"empty":                     "",
		"not json":                  "hello\n",
		"no header":                 user,
		"newer format":              strings.Replace(header, fmt.Sprintf(`"format":%d`, store.ArchiveFormat), `"format":99`, 1),
		"unknown kind":              header + `{"kind":"spaceship","record":{}}` + "\n",
		"kinds out of order":        header + company + user,
		"user twice":                header + user + user,
		"invalid username":          header + strings.Replace(user, `"username":"ann"`, `"username":"a n"`, 1),
		"garden of a missing co":    header + user + line(store.KindGarden),
		"company without admin":     header + user + company,
		"permission of nobody":      header + company + admin,
		"position without bed":      header + line(store.KindPosition),
		"truncated line":            header + user[:len(user)/2],
		"bad level":                 header + user + company + strings.Replace(admin, `"level":"a"`, `"level":"x"`, 1),
		"token digest of nothing":   header + user + `{"kind":"token","record":{"digest":"","user_id":1,"created":"2026-01-01T00:00:00Z","expiry":"2026-01-01T00:00:00Z"}}` + "\n",
		"queued download of no bed": header + line(store.KindCloudJob),
	}
	// One store takes every bad archive: a refused import writes nothing, so it stays
	// empty, and a good archive still goes in at the end.
	dst, _ := openNodes(t, h, 1)
	for name, archive := range cases {
		err := dst[0].Import(context.Background(), strings.NewReader(archive), store.ImportOptions{})
		if !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
		if users, _ := dst[0].ListUsers(); len(users) != 0 {
			t.Fatalf("%s: a refused import left users: %+v", name, users)
		}
	}
	if err := dst[0].Import(context.Background(), strings.NewReader(good), store.ImportOptions{}); err != nil {
		t.Fatalf("the good archive after the bad ones: %v", err)
	}
}

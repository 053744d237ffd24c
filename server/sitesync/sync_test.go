package sitesync

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/postgres/pgtest"
)

// TestBoxAndOffice: a box that joins with data sends all of it (snapshot), then its
// changes and deletions; the office's users reach the box; a permission given at the
// box to an office user lets them read the box's garden at the office.
func TestBoxAndOffice(t *testing.T) {
	t.Parallel()
	hub := startHub(t, testKeys(t), filepath.Join(t.TempDir(), "hub"), nil)
	_ = hub
	ost := openOfficeStore(t, pgtest.NewDatabase(t))
	// The hub in this test runs with keys of its own; the office's come from its
	// database: start the hub with those.
	keys, err := LoadKeys(ost.Secret)
	if err != nil {
		t.Fatal(err)
	}
	hub.Stop()
	hub = startHub(t, keys, filepath.Join(t.TempDir(), "hub2"), nil)
	agronomist := must[store.User](t)(ost.CreateUser(store.NewUser{Username: "agronomist", FirstName: "A", LastName: "G", PasswordHash: "office-hash"}))

	b := newBoxStore(t)
	farmer := must[store.User](t)(b.st.CreateUser(store.NewUser{Username: "farmer", FirstName: "F", LastName: "L", PasswordHash: "farm-hash"}))
	if err := b.st.SaveWidgets(farmer.ID, []byte(`{"layout": [1, 2]}`)); err != nil {
		t.Fatal(err)
	}
	c := must[store.Company](t)(b.st.CreateCompany(farmer.ID, "Farm A"))
	g := must[store.Garden](t)(b.st.CreateGarden(c.ID, "Field"))
	picture := randomBytes(300 << 10) // three object chunks
	path, _, err := b.images.PutImage(context.Background(), g.ID, bytes.NewReader(picture))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.st.SetGardenImage(g.ID, path, corners); err != nil {
		t.Fatal(err)
	}
	bed := must[store.Bed](t)(b.st.CreateBed(g.ID, "3fa85f64-5717-4562-b3fc-2c963f66afa6", "north"))
	if err := b.st.PutBedValues(store.BedValues{Bed: bed.ID, Garden: g.ID, At: time.Now(), Data: json.RawMessage(`{"bed":{"soil_humidity":0.3}}`)}); err != nil {
		t.Fatal(err)
	}

	o := startOffice(t, hub, ost, "office-1")
	b.join(t, ost, "farm-a", hub.LeafURL())
	_ = o

	waitFor(t, 30*time.Second, "the box's records at the office", func() bool {
		bv, err := ost.BedValuesOfGarden(b.gid(g.ID))
		return err == nil && len(bv) == 1
	})
	if got, err := ost.Company(b.gid(c.ID)); err != nil || got.Name != "Farm A" {
		t.Errorf("company at the office: %+v, %v", got, err)
	}
	u, err := ost.UserByID(b.gid(farmer.ID))
	if err != nil || u.Username != "farmer" || u.PasswordHash != "farm-hash" {
		t.Errorf("farmer at the office: %+v, %v", u, err)
	}
	if doc, err := ost.Widgets(b.gid(farmer.ID)); err != nil || string(doc) != `{"layout": [1, 2]}` {
		t.Errorf("widgets at the office: %s, %v", doc, err)
	}
	opath, ocs, err := ost.GardenImage(b.gid(g.ID))
	if err != nil || len(ocs) != 3 {
		t.Fatalf("picture at the office: %q %v %v", opath, ocs, err)
	}
	rc, n, err := ost.OpenImage(context.Background(), opath)
	if got := readAll(t, rc, n, err); !bytes.Equal(got, picture) {
		t.Errorf("the picture at the office differs: %d bytes, want %d", len(got), len(picture))
	}
	if beds, err := ost.BedsOfGarden(b.gid(g.ID)); err != nil || len(beds) != 1 || beds[0].ID != b.gid(bed.ID) {
		t.Errorf("beds at the office: %+v, %v", beds, err)
	}

	// The office's users reach the box.
	waitFor(t, 30*time.Second, "the office's user at the box", func() bool {
		_, err := b.st.UserByID(store.GlobalID(store.OfficeSite, agronomist.ID))
		return err == nil
	})
	au, err := b.st.UserByUsername("agronomist")
	if err != nil || au.ID != store.GlobalID(store.OfficeSite, agronomist.ID) || au.PasswordHash != "office-hash" {
		t.Errorf("agronomist at the box: %+v, %v", au, err)
	}
	// A role for the agronomist, given at the farm.
	if _, err := b.st.SetGardenPermission(g.ID, farmer.ID, "agronomist", store.LevelUser); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the agronomist's role at the office", func() bool {
		_, a, err := ost.GardenAccess(b.gid(c.ID), b.gid(g.ID), agronomist.ID)
		return err == nil && a.Garden == store.LevelUser
	})
	// Deletions travel too.
	if _, err := b.st.DeleteBed(g.ID, bed.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the bed's deletion at the office", func() bool {
		beds, err := ost.BedsOfGarden(b.gid(g.ID))
		return err == nil && len(beds) == 0
	})
	waitFor(t, 30*time.Second, "the box's feed trimmed", func() bool {
		st, err := b.st.ChangeStats()
		return err == nil && st.Records == 0
	})
	st, err := b.box.Status(context.Background())
	if err != nil || !st.Connected || st.LastContact == nil || st.BacklogRecords != 0 {
		t.Errorf("box status %+v, %v", st, err)
	}
	_ = errors.New
}

// TestBacklogEndsWithRepeatedChanges: a batch whose last changes repeat records sent
// earlier in it (a company made, then renamed and deleted) leaves no backlog once the
// office has it. It stayed counted, as unsent, until the next write.
func TestBacklogEndsWithRepeatedChanges(t *testing.T) {
	t.Parallel()
	hub, ost := officeWithHub(t)
	startOffice(t, hub, ost, "office-1")
	b := newBoxStore(t)
	b.poll = time.Hour // the changes below are read in one batch, when woken
	b.join(t, ost, "farm-a", hub.LeafURL())
	owner := must[store.User](t)(b.st.CreateUser(store.NewUser{Username: "owner", FirstName: "O", LastName: "W", PasswordHash: "h"}))
	c := must[store.Company](t)(b.st.CreateCompany(owner.ID, "c"))
	must[store.User](t)(b.st.UpdateUser(owner.ID, store.UserUpdate{FirstName: new("Owen")}))
	if _, err := b.st.DeleteCompany(c.ID); err != nil {
		t.Fatal(err)
	}
	b.box.Wake()
	converge(t, 30*time.Second, b, ost)
	waitFor(t, 30*time.Second, "the box's backlog empty", func() bool {
		st, err := b.st.ChangeStats()
		return err == nil && st.Records == 0
	})
}

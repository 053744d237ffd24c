package storetest

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/gardend/gardend/store"
)

// site 7's records, as they are known here.
const replicaSite = 7

func gid(id uint64) uint64 { return store.GlobalID(replicaSite, id) }

// apply runs one ApplyReplica transaction that sets the cursor to seq.
func apply(t *testing.T, st store.ReplicaStore, seq uint64, fn func(w store.ReplicaWriter) error) store.Removed {
	t.Helper()
	r, err := st.ApplyReplica(replicaSite, "farm-a", func(w store.ReplicaWriter, cur uint64) (uint64, error) {
		return seq, fn(w)
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// testReplicaRecords: replicas are written under their global ids and read as any
// record; the cursor goes with them; deletions cascade; nothing is recorded in the
// change feed.
func testReplicaRecords(t *testing.T, h Harness) {
	st, clock := open(t, h)
	if _, err := st.StartChangeFeed(); err != nil {
		t.Fatal(err)
	}
	local := mustUser(t, st, "agronomist")
	_, last := feedAfter(t, st, 0)
	if cur, err := st.ReplicaCursor(replicaSite); err != nil || cur != 0 {
		t.Fatalf("ReplicaCursor = %d, %v", cur, err)
	}
	joined := clock.Now().Add(-time.Hour)
	farmer := store.ReplicaUser{ID: gid(1), Username: "farmer", FirstName: "F", LastName: "L", Email: "f@example.org",
		DateJoined: joined, PasswordHash: "hash1", Widgets: []byte(`{"w":1}`)}
	c := store.Company{ID: gid(1), Name: "Farm A"}
	g := store.Garden{ID: gid(2), Name: "Field", Company: c.ID}
	b := store.Bed{ID: gid(3), Garden: g.ID, UUID: uuidA, Name: "north"}
	r := apply(t, st, 10, func(w store.ReplicaWriter) error {
		return errors.Join(w.PutUser(farmer), w.PutCompany(c), w.PutGarden(g), w.PutBed(b),
			w.PutCompanyPermission(store.CompanyPermission{Permission: store.Permission{ID: gid(5), UserID: farmer.ID, Level: store.LevelAdmin}, Company: c.ID}),
			w.PutGardenPermission(store.GardenPermission{Permission: store.Permission{ID: gid(6), UserID: local.ID, Level: store.LevelUser}, Garden: g.ID}),
			w.SetGardenImage(g.ID, "images/sites/7/a.png", corners),
			w.PutBedValues(store.BedValues{Bed: b.ID, Garden: g.ID, At: joined, Data: json.RawMessage(`{"soil":0.3}`)}))
	})
	if len(r.ImagePaths)+len(r.BedUUIDs) != 0 {
		t.Errorf("removed %+v", r)
	}
	if cur, err := st.ReplicaCursor(replicaSite); err != nil || cur != 10 {
		t.Errorf("ReplicaCursor = %d, %v; want 10", cur, err)
	}
	if more, _ := feedAfter(t, st, last); len(more) != 0 {
		t.Errorf("replicas recorded in the change feed: %v", more)
	}
	u, err := st.UserByUsername("farmer")
	if err != nil || u.ID != gid(1) || u.PasswordHash != "hash1" || !u.DateJoined.Equal(joined) || u.SiteAdmin {
		t.Errorf("replica user %+v, %v", u, err)
	}
	if doc, err := st.Widgets(u.ID); err != nil || string(doc) != `{"w":1}` {
		t.Errorf("widgets %s, %v", doc, err)
	}
	if got, err := st.Company(c.ID); err != nil || got != c {
		t.Errorf("Company = %+v, %v", got, err)
	}
	if gs, err := st.GardensVisibleTo(local.ID); err != nil || len(gs) != 1 || gs[0].ID != g.ID || gs[0].ImagePath == nil {
		t.Errorf("the agronomist's gardens: %+v, %v", gs, err)
	}
	if _, a, err := st.GardenAccess(c.ID, g.ID, local.ID); err != nil || a.Garden != store.LevelUser {
		t.Errorf("GardenAccess = %+v, %v", a, err)
	}
	if beds, err := st.BedsOfGarden(g.ID); err != nil || len(beds) != 1 || beds[0] != b {
		t.Errorf("BedsOfGarden = %+v, %v", beds, err)
	}
	if vs, err := st.BedValuesOfGarden(g.ID); err != nil || len(vs) != 1 || string(vs[0].Data) != `{"soil":0.3}` || !vs[0].At.Equal(joined) {
		t.Errorf("BedValuesOfGarden = %+v, %v", vs, err)
	}
	// A local record made now keeps a local id.
	own := mustCompany(t, st, local, "own")
	if !store.IsLocal(own.ID) {
		t.Errorf("a new local company got id %d", own.ID)
	}

	// Updates: a new hash ends the user's sessions here; a renamed garden keeps its
	// picture; a new picture leaves the old content to remove.
	var d [store.DigestSize]byte
	d[0] = 9
	if err := st.CreateToken(u.ID, d, clock.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	farmer.PasswordHash, farmer.FirstName, farmer.Widgets = "hash2", "Fred", nil
	g.Name = "Big field"
	r = apply(t, st, 11, func(w store.ReplicaWriter) error {
		return errors.Join(w.PutUser(farmer), w.PutGarden(g), w.SetGardenImage(g.ID, "images/sites/7/b.png", corners))
	})
	if !slices.Equal(r.ImagePaths, []string{"images/sites/7/a.png"}) {
		t.Errorf("removed %+v, want the old picture", r)
	}
	if _, err := st.Authenticate(d); !errors.Is(err, store.ErrUnauthenticated) {
		t.Errorf("a session of the old password: %v", err)
	}
	if u, err := st.UserByID(farmer.ID); err != nil || u.FirstName != "Fred" || u.PasswordHash != "hash2" {
		t.Errorf("updated user %+v, %v", u, err)
	}
	if doc, err := st.Widgets(farmer.ID); err != nil || doc != nil {
		t.Errorf("widgets after removal: %s, %v", doc, err)
	}
	if got, err := st.Garden(g.ID); err != nil || got.Name != "Big field" || got.ImagePath == nil || *got.ImagePath != "images/sites/7/b.png" {
		t.Errorf("garden %+v, %v", got, err)
	}

	// A parent that is missing is ErrNotFound, and nothing of the transaction stays.
	_, err = st.ApplyReplica(replicaSite, "farm-a", func(w store.ReplicaWriter, cur uint64) (uint64, error) {
		if err := w.PutCompany(store.Company{ID: gid(40), Name: "x"}); err != nil {
			return 0, err
		}
		return 12, w.PutGarden(store.Garden{ID: gid(41), Name: "orphan", Company: gid(99)})
	})
	wantErr(t, err, store.ErrNotFound)
	if _, err := st.Company(gid(40)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a failed batch left its company: %v", err)
	}
	if cur, _ := st.ReplicaCursor(replicaSite); cur != 11 {
		t.Errorf("a failed batch moved the cursor to %d", cur)
	}
	// Values of a bed that is not here, or not in the garden named, are ErrNotFound.
	for _, v := range []store.BedValues{{Bed: gid(98), Garden: g.ID}, {Bed: b.ID, Garden: gid(97)}} {
		v.At, v.Data = joined, json.RawMessage(`{}`)
		_, err = st.ApplyReplica(replicaSite, "farm-a", func(w store.ReplicaWriter, cur uint64) (uint64, error) {
			return 12, w.PutBedValues(v)
		})
		wantErr(t, err, store.ErrNotFound)
	}

	// Deleting the company takes everything under it; deleting twice is no error.
	r = apply(t, st, 12, func(w store.ReplicaWriter) error {
		return errors.Join(w.DeleteCompany(c.ID), w.DeleteCompany(c.ID), w.DeleteBed(b.ID), w.DeleteGarden(g.ID))
	})
	if !slices.Equal(r.ImagePaths, []string{"images/sites/7/b.png"}) || !slices.Equal(r.BedUUIDs, []string{uuidA}) {
		t.Errorf("removed %+v", r)
	}
	if _, err := st.Garden(g.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("garden after its company's deletion: %v", err)
	}
	if gs, err := st.GardensVisibleTo(local.ID); err != nil || len(gs) != 0 {
		t.Errorf("gardens left visible: %+v, %v", gs, err)
	}
	if more, _ := feedAfter(t, st, last); len(more) != 2 { // own company and its permission
		t.Errorf("feed after replica writes: %v", more)
	}
}

// testReplicaUsernames: a replica whose name is taken here is name@SITE, and keeps
// that spelling while its home name stays.
func testReplicaUsernames(t *testing.T, h Harness) {
	st, clock := open(t, h)
	mustUser(t, st, "alice")
	mustUser(t, st, "mary")
	users := []store.ReplicaUser{
		{ID: gid(1), Username: "alice"}, {ID: gid(2), Username: "rnary"}, {ID: gid(3), Username: "carol"},
	}
	apply(t, st, 1, func(w store.ReplicaWriter) error {
		var errs []error
		for _, u := range users {
			u.FirstName, u.LastName, u.PasswordHash, u.DateJoined = "F", "L", "h", clock.Now()
			errs = append(errs, w.PutUser(u))
		}
		return errors.Join(errs...)
	})
	want := map[uint64]string{gid(1): "alice@farm-a", gid(2): "rnary@farm-a", gid(3): "carol"}
	for id, name := range want {
		if u, err := st.UserByID(id); err != nil || u.Username != name {
			t.Errorf("user %d: %q, %v; want %q", id, u.Username, err, name)
		}
		if u, err := st.UserByUsername(name); err != nil || u.ID != id {
			t.Errorf("UserByUsername(%q) = %d, %v", name, u.ID, err)
		}
	}
	// The same names again change nothing; a rename at home is followed.
	users[0].Username, users[2].Username = "alice", "caroline"
	apply(t, st, 2, func(w store.ReplicaWriter) error {
		var errs []error
		for _, u := range users {
			u.FirstName, u.LastName, u.PasswordHash, u.DateJoined = "F", "L", "h", clock.Now()
			errs = append(errs, w.PutUser(u))
		}
		return errors.Join(errs...)
	})
	if u, _ := st.UserByID(gid(1)); u.Username != "alice@farm-a" {
		t.Errorf("unchanged replica renamed to %q", u.Username)
	}
	if u, _ := st.UserByID(gid(3)); u.Username != "caroline" {
		t.Errorf("renamed replica is %q", u.Username)
	}
	// The names replicas hold are taken here; a site's spelling is kept for its
	// users even when none holds it yet.
	_, err := st.CreateUser(store.NewUser{Username: "alice@farm-a", FirstName: "x", LastName: "y", PasswordHash: "h"})
	wantErr(t, err, store.ErrInvalid)
	_, err = st.CreateUser(store.NewUser{Username: "zoe@farm-z", FirstName: "x", LastName: "y", PasswordHash: "h"})
	wantErr(t, err, store.ErrInvalid)
	_, err = st.CreateUser(store.NewUser{Username: "caroline", FirstName: "x", LastName: "y", PasswordHash: "h"})
	wantErr(t, err, store.ErrConflict)
}

// testReplicaLogs: a replica log is read, listed, searched and counted among its
// assignee's tasks like a local one; an update replaces its index entries; it goes
// on its own and with its garden; nothing is recorded in the change feed.
func testReplicaLogs(t *testing.T, h Harness) {
	st, clock := open(t, h)
	if _, err := st.StartChangeFeed(); err != nil {
		t.Fatal(err)
	}
	local := mustUser(t, st, "agronomist")
	_, last := feedAfter(t, st, 0)
	at := clock.Now().Add(-time.Hour)
	farmer := store.ReplicaUser{ID: gid(1), Username: "farmer", FirstName: "F", LastName: "L", DateJoined: at, PasswordHash: "h"}
	c := store.Company{ID: gid(1), Name: "Farm A"}
	g := store.Garden{ID: gid(2), Name: "Field", Company: c.ID}
	b := store.Bed{ID: gid(3), Garden: g.ID, UUID: uuidA, Name: "north"}
	task := store.ArchivedLog{ID: gid(8), Garden: g.ID, Type: store.LogTask, Title: "Spray the aphids", Notes: "north side",
		At: at.Add(48 * time.Hour), Bed: ptr(b.ID), AssigneeID: local.ID, Status: store.LogPending, AuthorID: farmer.ID,
		Created: at, Updated: at, ClientKey: "k-1"}
	apply(t, st, 1, func(w store.ReplicaWriter) error {
		return errors.Join(w.PutUser(farmer), w.PutCompany(c), w.PutGarden(g), w.PutBed(b),
			w.PutGardenPermission(store.GardenPermission{Permission: store.Permission{ID: gid(6), UserID: local.ID, Level: store.LevelUser}, Garden: g.ID}),
			w.PutLog(task))
	})
	l, err := st.Log(g.ID, task.ID)
	if err != nil || l.Author != "farmer" || l.Assignee == nil || *l.Assignee != "agronomist" || l.Company != c.ID ||
		l.Bed == nil || *l.Bed != b.ID || !l.At.Equal(task.At) || l.Title != task.Title {
		t.Fatalf("replica log %+v, %v", l, err)
	}
	page, err := st.ListLogs(g.ID, store.LogFilter{Words: []string{"aphids"}})
	if err != nil || len(page.Logs) != 1 || page.Logs[0].ID != task.ID {
		t.Errorf("search for the replica log: %+v, %v", page, err)
	}
	if ts, err := st.PendingTasks(local.ID, nil); err != nil || len(ts) != 1 || ts[0].ID != task.ID {
		t.Errorf("PendingTasks = %+v, %v", ts, err)
	}
	// Done at its home, retitled: the old index entries go.
	task.Status, task.Title, task.Updated = store.LogDone, "Sprayed", at.Add(time.Minute)
	apply(t, st, 2, func(w store.ReplicaWriter) error { return w.PutLog(task) })
	if ts, err := st.PendingTasks(local.ID, nil); err != nil || len(ts) != 0 {
		t.Errorf("PendingTasks after done = %+v, %v", ts, err)
	}
	if page, err := st.ListLogs(g.ID, store.LogFilter{Words: []string{"aphids"}}); err != nil || len(page.Logs) != 0 {
		t.Errorf("the old title still found: %+v, %v", page, err)
	}
	if page, err := st.ListLogs(g.ID, store.LogFilter{Words: []string{"sprayed"}}); err != nil || len(page.Logs) != 1 {
		t.Errorf("the new title not found: %+v, %v", page, err)
	}
	// A log of a garden that is not here, or by a user who is not, is ErrNotFound.
	_, err = st.ApplyReplica(replicaSite, "farm-a", func(w store.ReplicaWriter, cur uint64) (uint64, error) {
		return 3, w.PutLog(store.ArchivedLog{ID: gid(9), Garden: gid(99), Type: store.LogObservation, Title: "x",
			At: at, Status: store.LogDone, AuthorID: farmer.ID, Created: at, Updated: at})
	})
	wantErr(t, err, store.ErrNotFound)
	_, err = st.ApplyReplica(replicaSite, "farm-a", func(w store.ReplicaWriter, cur uint64) (uint64, error) {
		return 3, w.PutLog(store.ArchivedLog{ID: gid(9), Garden: g.ID, Type: store.LogObservation, Title: "x",
			At: at, Status: store.LogDone, AuthorID: gid(77), Created: at, Updated: at})
	})
	wantErr(t, err, store.ErrNotFound)
	// A malformed one is refused as the API would refuse it.
	_, err = st.ApplyReplica(replicaSite, "farm-a", func(w store.ReplicaWriter, cur uint64) (uint64, error) {
		return 3, w.PutLog(store.ArchivedLog{ID: gid(9), Garden: g.ID, Type: "gossip", Title: "x",
			At: at, Status: store.LogDone, AuthorID: farmer.ID, Created: at, Updated: at})
	})
	wantErr(t, err, store.ErrInvalid)
	// Deleted on its own (twice is no error), and with its garden.
	other := store.ArchivedLog{ID: gid(10), Garden: g.ID, Type: store.LogObservation, Title: "Ladybirds",
		At: at, Status: store.LogDone, AuthorID: farmer.ID, Created: at, Updated: at}
	apply(t, st, 4, func(w store.ReplicaWriter) error {
		return errors.Join(w.DeleteLog(task.ID), w.DeleteLog(task.ID), w.PutLog(other))
	})
	if _, err := st.Log(g.ID, task.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleted replica log: %v", err)
	}
	apply(t, st, 5, func(w store.ReplicaWriter) error { return w.DeleteGarden(g.ID) })
	if _, err := st.Log(g.ID, other.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("replica log after its garden's deletion: %v", err)
	}
	if more, _ := feedAfter(t, st, last); len(more) != 0 {
		t.Errorf("replica logs recorded in the change feed: %v", more)
	}
}

// testReplicaPhotos: a replica photo is listed with its log and read like a local
// one; a new version leaves the content it replaced to remove; it goes on its own,
// with its log and with its garden, its content listed; nothing is recorded in the
// change feed.
func testReplicaPhotos(t *testing.T, h Harness) {
	st, clock := open(t, h)
	if _, err := st.StartChangeFeed(); err != nil {
		t.Fatal(err)
	}
	local := mustUser(t, st, "agronomist")
	_, last := feedAfter(t, st, 0)
	at := clock.Now().Add(-time.Hour)
	farmer := store.ReplicaUser{ID: gid(1), Username: "farmer", FirstName: "F", LastName: "L", DateJoined: at, PasswordHash: "h"}
	c := store.Company{ID: gid(1), Name: "Farm A"}
	g := store.Garden{ID: gid(2), Name: "Field", Company: c.ID}
	logOf := func(id uint64, title string) store.ArchivedLog {
		return store.ArchivedLog{ID: id, Garden: g.ID, Type: store.LogObservation, Title: title, At: at,
			Status: store.LogDone, AuthorID: farmer.ID, Created: at, Updated: at}
	}
	l := logOf(gid(8), "Blight")
	// An office user may upload at the farm.
	p := photo(1)
	p.ID, p.Log, p.Garden, p.Uploader, p.Created = gid(20), l.ID, g.ID, local.ID, at
	apply(t, st, 1, func(w store.ReplicaWriter) error {
		return errors.Join(w.PutUser(farmer), w.PutCompany(c), w.PutGarden(g), w.PutLog(l), w.PutPhoto(p))
	})
	if got, err := st.Log(g.ID, l.ID); err != nil || !slices.Equal(got.Photos, []uint64{p.ID}) {
		t.Fatalf("replica log's photos: %v, %v", got.Photos, err)
	}
	if got, err := st.Photo(g.ID, l.ID, p.ID); err != nil || got != p {
		t.Fatalf("replica photo %+v, %v; want %+v", got, err, p)
	}
	if n, err := st.PhotoBytes(); err != nil || n != p.Bytes() {
		t.Errorf("PhotoBytes = %d, %v; want %d", n, err, p.Bytes())
	}
	if paths, err := st.PhotoPaths(); err != nil || len(paths) != 2 || !paths[p.Path] || !paths[p.ThumbPath] {
		t.Errorf("PhotoPaths = %v, %v", paths, err)
	}
	// The same again replaces nothing; new content (a thumbnail made at its home,
	// say) leaves the old to remove.
	if r := apply(t, st, 2, func(w store.ReplicaWriter) error { return w.PutPhoto(p) }); len(r.PhotoPaths) != 0 {
		t.Errorf("the same photo again removed %v", r.PhotoPaths)
	}
	next := photo(2)
	next.ID, next.Log, next.Garden, next.Uploader, next.Created = p.ID, l.ID, g.ID, local.ID, at
	if r := apply(t, st, 3, func(w store.ReplicaWriter) error { return w.PutPhoto(next) }); !slices.Equal(r.PhotoPaths, []string{p.Path, p.ThumbPath}) {
		t.Errorf("replaced content %v, want %v", r.PhotoPaths, []string{p.Path, p.ThumbPath})
	}
	if n, err := st.PhotoBytes(); err != nil || n != next.Bytes() {
		t.Errorf("PhotoBytes after the update = %d, %v; want %d", n, err, next.Bytes())
	}
	// A photo of a log that is not here, of a log through another garden, by a user
	// who is not here, or malformed, is refused and writes nothing.
	other := store.Garden{ID: gid(3), Name: "Other", Company: c.ID}
	apply(t, st, 4, func(w store.ReplicaWriter) error { return w.PutGarden(other) })
	for _, tc := range []struct {
		what string
		edit func(*store.Photo)
		want error
	}{
		{"log not here", func(q *store.Photo) { q.Log = gid(99) }, store.ErrNotFound},
		{"another garden", func(q *store.Photo) { q.Garden = other.ID }, store.ErrNotFound},
		{"uploader not here", func(q *store.Photo) { q.Uploader = gid(77) }, store.ErrNotFound},
		{"malformed", func(q *store.Photo) { q.ContentType = "text/html" }, store.ErrInvalid},
	} {
		q := photo(3)
		q.ID, q.Log, q.Garden, q.Uploader, q.Created = gid(21), l.ID, g.ID, farmer.ID, at
		tc.edit(&q)
		_, err := st.ApplyReplica(replicaSite, "farm-a", func(w store.ReplicaWriter, cur uint64) (uint64, error) {
			return 5, w.PutPhoto(q)
		})
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.what, err, tc.want)
		}
	}
	if _, err := st.PhotoByID(gid(21)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused photo was written: %v", err)
	}
	// Deleted on its own (twice is no error), with its log and with its garden.
	r := apply(t, st, 6, func(w store.ReplicaWriter) error { return errors.Join(w.DeletePhoto(p.ID), w.DeletePhoto(p.ID)) })
	if !slices.Equal(r.PhotoPaths, []string{next.Path, next.ThumbPath}) {
		t.Errorf("deleted photo's content %v", r.PhotoPaths)
	}
	if got, err := st.Log(g.ID, l.ID); err != nil || len(got.Photos) != 0 {
		t.Errorf("log's photos after the deletion: %v, %v", got.Photos, err)
	}
	l2 := logOf(gid(9), "Ladybirds")
	p4, p5 := photo(4), photo(5)
	p4.ID, p4.Log, p4.Garden, p4.Uploader, p4.Created = gid(22), l.ID, g.ID, farmer.ID, at
	p5.ID, p5.Log, p5.Garden, p5.Uploader, p5.Created = gid(23), l2.ID, g.ID, farmer.ID, at
	apply(t, st, 7, func(w store.ReplicaWriter) error { return errors.Join(w.PutLog(l2), w.PutPhoto(p4), w.PutPhoto(p5)) })
	if r := apply(t, st, 8, func(w store.ReplicaWriter) error { return w.DeleteLog(l.ID) }); !slices.Equal(r.PhotoPaths, []string{p4.Path, p4.ThumbPath}) {
		t.Errorf("the log's deletion removed %v", r.PhotoPaths)
	}
	// A garden's content goes with it: listed to remove (bbolt's files) or deleted
	// in the transaction (PostgreSQL's rows).
	if r := apply(t, st, 9, func(w store.ReplicaWriter) error { return w.DeleteGarden(g.ID) }); len(r.PhotoPaths) != 0 && !slices.Equal(r.PhotoPaths, []string{p5.Path, p5.ThumbPath}) {
		t.Errorf("the garden's deletion removed %v", r.PhotoPaths)
	}
	if paths, err := st.PhotoPaths(); err != nil || len(paths) != 0 {
		t.Errorf("PhotoPaths after every deletion = %v, %v", paths, err)
	}
	if n, err := st.PhotoBytes(); err != nil || n != 0 {
		t.Errorf("PhotoBytes after every deletion = %d, %v", n, err)
	}
	if more, _ := feedAfter(t, st, last); len(more) != 0 {
		t.Errorf("replica photos recorded in the change feed: %v", more)
	}
}

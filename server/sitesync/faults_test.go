package sitesync

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/gardend/gardend/server/sitesync/synctest"
	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/postgres"
	"github.com/gardend/gardend/store/postgres/pgtest"
)

// officeWithHub is a hub with the keys of a fresh office database, and that database.
func officeWithHub(t *testing.T) (*synctest.Hub, *postgres.Store) {
	t.Helper()
	ost := openOfficeStore(t, pgtest.NewDatabase(t))
	keys, err := LoadKeys(ost.Secret)
	if err != nil {
		t.Fatal(err)
	}
	return startHub(t, keys, filepath.Join(t.TempDir(), "hub"), nil), ost
}

// writes makes n rounds of changes at a box: users, companies with gardens, beds,
// pictures, permissions, renames and deletions.
func writes(t *testing.T, b *testBox, round, n int) {
	t.Helper()
	ctx := context.Background()
	owner, err := b.st.UserByUsername("owner")
	if err != nil {
		owner = must[store.User](t)(b.st.CreateUser(store.NewUser{Username: "owner", FirstName: "O", LastName: "W", PasswordHash: "h"}))
	}
	for i := range n {
		name := fmt.Sprintf("r%d-%d", round, i)
		u := must[store.User](t)(b.st.CreateUser(store.NewUser{Username: "u" + name, FirstName: "F", LastName: "L", PasswordHash: "h" + name}))
		c := must[store.Company](t)(b.st.CreateCompany(owner.ID, "c"+name))
		g := must[store.Garden](t)(b.st.CreateGarden(c.ID, "g"+name))
		if _, err := b.st.SetGardenPermission(g.ID, owner.ID, u.Username, store.LevelUser); err != nil {
			t.Fatal(err)
		}
		bed := must[store.Bed](t)(b.st.CreateBed(g.ID, fmt.Sprintf("p-%s", name), "bed "+name))
		if err := b.st.PutBedValues(store.BedValues{Bed: bed.ID, Garden: g.ID, At: time.Now(), Data: json.RawMessage(`{"n":` + fmt.Sprint(i) + `}`)}); err != nil {
			t.Fatal(err)
		}
		// The logbook: an observation on the bed, a task for the garden's user; some
		// done, some deleted.
		seen := must[store.Log](t)(b.st.CreateLog(g.ID, owner.ID, store.LogPatch{Type: ptr(store.LogObservation),
			Title: ptr("aphids " + name), Bed: ptr(bed.ID)}, nil))
		task := must[store.Log](t)(b.st.CreateLog(g.ID, owner.ID, store.LogPatch{Type: ptr(store.LogTask),
			Title: ptr("spray " + name), Assignee: ptr(u.Username)}, nil))
		// Photos: on every other task, and on observations some of which are then
		// deleted with their photos.
		if i%2 == 1 {
			addPhoto(t, b, g.ID, task.ID, u.ID, store.PhotoJPEG, randomBytes(4<<10), randomBytes(1<<10))
		}
		if i%3 != 0 {
			addPhoto(t, b, g.ID, seen.ID, owner.ID, store.PhotoPNG, randomBytes(3<<10), nil)
		}
		switch i % 3 {
		case 1:
			must[store.Log](t)(b.st.UpdateLog(g.ID, task.ID, store.LogPatch{Status: ptr(store.LogDone)}, nil))
		case 2:
			if _, err := b.st.DeleteLog(g.ID, seen.ID, nil); err != nil {
				t.Fatal(err)
			}
		}
		if i%5 == 0 {
			path, _, err := b.images.PutImage(ctx, g.ID, bytes.NewReader(randomBytes(20<<10)))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b.st.SetGardenImage(g.ID, path, corners); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := b.st.UpdateUser(u.ID, store.UserUpdate{FirstName: ptr("Renamed")}); err != nil {
			t.Fatal(err)
		}
		if i%4 == 3 {
			if _, err := b.st.DeleteCompany(c.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func ptr[T any](v T) *T { return &v }

// addPhoto stores a photo's content at a box and records it on a log (without a
// thumbnail when thumb is nil).
func addPhoto(t testing.TB, b *testBox, garden, log, uploader uint64, contentType string, pic, thumb []byte) store.Photo {
	t.Helper()
	ctx := context.Background()
	p := store.Photo{ContentType: contentType, Width: 64, Height: 48, Uploader: uploader}
	var err error
	if p.Path, p.Size, err = b.photos.PutPhoto(ctx, garden, photoExt(contentType), bytes.NewReader(pic)); err != nil {
		t.Fatal(err)
	}
	if thumb != nil {
		if p.ThumbPath, p.ThumbSize, err = b.photos.PutPhoto(ctx, garden, ".jpg", bytes.NewReader(thumb)); err != nil {
			t.Fatal(err)
		}
	}
	return must[store.Photo](t)(b.st.AddPhoto(garden, log, p, 0, nil))
}

// converge waits until the office holds exactly the box's records.
func converge(t *testing.T, within time.Duration, b *testBox, office store.Backend) time.Duration {
	t.Helper()
	start := time.Now()
	var last []string
	deadline := start.Add(within)
	for {
		// Comparing every record is slow with many: first until the box's feed is
		// empty (the office acknowledged all of it), cheaply.
		if st, err := b.st.ChangeStats(); err == nil && st.Records > 0 && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if last = diff(b.st, office, b.site.Number, b.photos); len(last) == 0 {
			return time.Since(start)
		}
		if os.Getenv("SYNC_TRACE") != "" {
			cur, _ := office.ReplicaCursor(b.site.Number)
			t.Logf("%v: cursor %d, %s", time.Since(start).Round(100*time.Millisecond), cur, last[0])
		}
		if time.Now().After(deadline) {
			if len(last) > 10 {
				last = last[:10]
			}
			t.Fatalf("not converged after %v:\n%s", within, strings.Join(last, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// counters are an office's applied and refused changes of a site.
func counters(o *Office, site uint32) (applied, refused uint64) {
	a, r := o.Counters()
	return a[site], r[site]
}

// TestLinkFaults: through a link of 300 ms latency and 64 kbit/s that is cut, cut
// in the middle of a message and flaps, the office ends with exactly the box's
// records, each change applied once.
func TestLinkFaults(t *testing.T) {
	t.Parallel()
	hub, ost := officeWithHub(t)
	proxy := synctest.NewProxy(t, strings.TrimPrefix(hub.LeafURL(), "nats-leaf://"))
	o := startOffice(t, hub, ost, "office-1")
	b := newBoxStore(t)
	writes(t, b, 0, 5)
	b.join(t, ost, "farm-a", "nats-leaf://"+proxy.Addr())
	converge(t, 30*time.Second, b, ost)

	proxy.Shape(300*time.Millisecond, 8000) // 64 kbit/s
	writes(t, b, 1, 5)
	// Cut in the middle of whatever goes up next (a picture's chunk).
	proxy.CutAfter(6000)
	converge(t, 60*time.Second, b, ost)

	proxy.Shape(0, 0)
	proxy.Cut()
	writes(t, b, 2, 8)
	time.Sleep(time.Second)
	proxy.Restore()
	converge(t, 30*time.Second, b, ost)

	// Flapping: down and up every 1.5 s while the box writes.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				proxy.Restore()
				return
			case <-time.After(1500 * time.Millisecond):
			}
			proxy.Cut()
			select {
			case <-stop:
				proxy.Restore()
				return
			case <-time.After(1500 * time.Millisecond):
			}
			proxy.Restore()
		}
	})
	for round := 3; round < 6; round++ {
		writes(t, b, round, 4)
		time.Sleep(time.Second)
	}
	close(stop)
	wg.Wait()
	converge(t, 60*time.Second, b, ost)
	applied, refused := counters(o.office, b.site.Number)
	if published := b.box.Published(); applied != published || refused != 0 {
		t.Errorf("the box published %d changes; the office applied %d and refused %d", published, applied, refused)
	}
	t.Logf("bytes through the link: %d up, %d down", proxy.Up.Load(), proxy.Down.Load())
}

// TestForgedChanges: a site's credentials publish, by hand, changes about records
// homed elsewhere; the office refuses each, logs it, and changes nothing.
func TestForgedChanges(t *testing.T) {
	t.Parallel()
	hub, ost := officeWithHub(t)
	officeUser := must[store.User](t)(ost.CreateUser(store.NewUser{Username: "boss", FirstName: "B", LastName: "O", PasswordHash: "office-hash"}))
	officeCompany := must[store.Company](t)(ost.CreateCompany(officeUser.ID, "HQ"))
	officeGarden := must[store.Garden](t)(ost.CreateGarden(officeCompany.ID, "HQ lawn"))
	var logs syncBuffer
	o, err := StartOffice(OfficeConfig{Store: ost, HubURL: hub.ClientURL(), Node: "n1", Logger: zerolog.New(&logs),
		Poll: 200 * time.Millisecond, Lease: 3 * time.Second, WaitWarn: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = o.Run(ctx) }()
	defer func() { cancel(); <-done; o.Close() }()

	siteA, credsA, err := AddSite(ost, "farm-a")
	if err != nil {
		t.Fatal(err)
	}
	siteB, _, err := AddSite(ost, "farm-b")
	if err != nil {
		t.Fatal(err)
	}
	// A box of its own making with farm-a's credentials.
	srv, nc, js := impostor(t, hub, credsA)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: OutStream, Subjects: []string{OutSubject(siteA.Number)}}); err != nil {
		t.Fatal(err)
	}
	// What a box says when its leaf node connects: the office sets the hub's
	// sourcing from it up at once.
	waitFor(t, 10*time.Second, "the forger's leaf node", func() bool { return srv.NumLeafNodes() == 1 })
	report, _ := json.Marshal(reportMessage{Connects: 1, Session: "forger"})
	waitFor(t, 10*time.Second, "the office applying farm-a", func() bool {
		_ = nc.Publish(StatusSubject(siteA.Number), report)
		sites, err := ost.Sites()
		return err == nil && len(sites) == 2 && sites[0].LastContact != nil
	})
	a, bb := siteA.Number, siteB.Number
	rec := func(v any) json.RawMessage { data, _ := json.Marshal(v); return data }
	forged := []Message{
		// farm-b's company, sent by farm-a.
		{Site: a, Seq: 1, Kind: store.KindCompany, ID: store.GlobalID(bb, 5), Rec: rec(store.Company{ID: store.GlobalID(bb, 5), Name: "stolen"})},
		// A garden of farm-a's put under the office's company.
		{Site: a, Seq: 2, Kind: store.KindGarden, ID: store.GlobalID(a, 9), Rec: rec(wireGarden{ID: store.GlobalID(a, 9), Company: store.GlobalID(store.OfficeSite, officeCompany.ID), Name: "inside HQ"})},
		// The office's user with a password of farm-a's choosing.
		{Site: a, Seq: 3, Kind: store.KindUser, ID: store.GlobalID(store.OfficeSite, officeUser.ID), Rec: rec(wireUser{ID: store.GlobalID(store.OfficeSite, officeUser.ID), Username: "boss", FirstName: "B", LastName: "O", PasswordHash: "forged"})},
		// A message that says it comes from farm-b.
		{Site: bb, Seq: 4, Kind: store.KindCompany, ID: store.GlobalID(bb, 6), Rec: rec(store.Company{ID: store.GlobalID(bb, 6), Name: "b's"})},
		// The office's company deleted by farm-a.
		{Site: a, Seq: 5, Kind: store.KindCompany, ID: store.GlobalID(store.OfficeSite, officeCompany.ID), Deleted: true},
		// A log of farm-a's written into the office's garden.
		{Site: a, Seq: 6, Kind: store.KindLog, ID: store.GlobalID(a, 3), Rec: rec(store.ArchivedLog{ID: store.GlobalID(a, 3),
			Garden: store.GlobalID(store.OfficeSite, officeGarden.ID), Type: store.LogObservation, Title: "planted", Status: store.LogDone,
			AuthorID: store.GlobalID(store.OfficeSite, officeUser.ID), At: time.Now(), Created: time.Now(), Updated: time.Now()})},
		// A log of farm-a's naming a bed of farm-b's.
		{Site: a, Seq: 7, Kind: store.KindLog, ID: store.GlobalID(a, 4), Rec: rec(store.ArchivedLog{ID: store.GlobalID(a, 4),
			Garden: store.GlobalID(a, 9), Bed: ptr(store.GlobalID(bb, 2)), Type: store.LogObservation, Title: "b's bed", Status: store.LogDone,
			AuthorID: store.GlobalID(a, 1), At: time.Now(), Created: time.Now(), Updated: time.Now()})},
		// And one of its own, which stands.
		{Site: a, Seq: 8, Kind: store.KindCompany, ID: store.GlobalID(a, 1), Rec: rec(store.Company{ID: store.GlobalID(a, 1), Name: "farm a"})},
	}
	// Photos: a log of farm-a's with one photo whose bytes are not the ones the
	// change names, one homed at farm-b, and one that stands.
	obs, err := js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: PictureBucket(a), Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	picture := randomBytes(5000)
	object := func(name string, data []byte) wireFile {
		info, err := obs.PutBytes(ctx, name, data)
		if err != nil {
			t.Fatal(err)
		}
		return wireFile{Object: name, Size: int64(info.Size), SHA256: info.Digest}
	}
	good := object("photos/000000000000000000000000000000a1.jpg", picture)
	tampered := object("photos/000000000000000000000000000000a2.jpg", picture)
	tampered.SHA256 = good.SHA256[:len(good.SHA256)-4] + "AAA="
	author, garden, log := store.GlobalID(a, 1), store.GlobalID(a, 10), store.GlobalID(a, 5)
	photo := func(id uint64, f wireFile) json.RawMessage {
		return rec(wirePhoto{ID: id, Log: log, Garden: garden, ContentType: store.PhotoJPEG, Width: 64, Height: 48,
			Uploader: author, Created: time.Now(), Picture: f})
	}
	forged = append(forged,
		Message{Site: a, Seq: 9, Kind: store.KindGarden, ID: garden, Rec: rec(wireGarden{ID: garden, Company: store.GlobalID(a, 1), Name: "field"})},
		Message{Site: a, Seq: 10, Kind: store.KindUser, ID: author, Rec: rec(wireUser{ID: author, Username: "farmer", FirstName: "F", LastName: "A", PasswordHash: "h"})},
		Message{Site: a, Seq: 11, Kind: store.KindLog, ID: log, Rec: rec(store.ArchivedLog{ID: log, Garden: garden, Type: store.LogObservation,
			Title: "blight", Status: store.LogDone, AuthorID: author, At: time.Now(), Created: time.Now(), Updated: time.Now()})},
		Message{Site: a, Seq: 12, Kind: store.KindPhoto, ID: store.GlobalID(a, 6), Ref: log, Rec: photo(store.GlobalID(a, 6), tampered)},
		Message{Site: a, Seq: 13, Kind: store.KindPhoto, ID: store.GlobalID(bb, 7), Ref: log, Rec: photo(store.GlobalID(bb, 7), good)},
		Message{Site: a, Seq: 14, Kind: store.KindPhoto, ID: store.GlobalID(a, 8), Ref: log, Rec: photo(store.GlobalID(a, 8), good)},
	)
	for _, m := range forged {
		data, _ := json.Marshal(m)
		if _, err := js.Publish(ctx, OutSubject(a), data); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 30*time.Second, "the office applied farm-a's own company and photo", func() bool {
		_, err := ost.Company(store.GlobalID(a, 1))
		_, perr := ost.PhotoByID(store.GlobalID(a, 8))
		return err == nil && perr == nil
	})
	waitFor(t, 10*time.Second, "the last forgery counted", func() bool {
		_, refused := counters(o, a)
		return refused == 9
	})
	if applied, refused := counters(o, a); applied != 5 || refused != 9 {
		t.Errorf("applied %d, refused %d; want 5 and 9", applied, refused)
	}
	if l, err := ost.Log(garden, log); err != nil || !slices.Equal(l.Photos, []uint64{store.GlobalID(a, 8)}) {
		t.Errorf("the log's photos at the office: %v, %v; want only the one that stands", l.Photos, err)
	}
	if p, err := ost.PhotoByID(store.GlobalID(a, 8)); err != nil {
		t.Error(err)
	} else if got := openBytes(t, ost, p.Path); !bytes.Equal(got, picture) {
		t.Errorf("the photo that stands holds %d bytes, not the %d sent", len(got), len(picture))
	}
	if u, _ := ost.UserByID(officeUser.ID); u.PasswordHash != "office-hash" {
		t.Errorf("the office user's hash became %q", u.PasswordHash)
	}
	if _, err := ost.Company(officeCompany.ID); err != nil {
		t.Errorf("the office's company: %v", err)
	}
	for _, id := range []uint64{store.GlobalID(bb, 5), store.GlobalID(bb, 6)} {
		if _, err := ost.Company(id); err == nil {
			t.Errorf("company %d of farm-b was written from farm-a's stream", id)
		}
	}
	if page, _ := ost.ListLogs(officeGarden.ID, store.LogFilter{}); len(page.Logs) != 0 {
		t.Errorf("a log appeared in the office's garden: %+v", page.Logs)
	}
	if gs, _ := ost.GardensOfCompany(officeCompany.ID); len(gs) != 1 {
		t.Errorf("a garden appeared in the office's company: %+v", gs)
	}
	out := logs.String()
	if n := strings.Count(out, "refused a change from a site"); n != 9 {
		t.Errorf("%d refusals logged, want 9:\n%s", n, out)
	}
	if !strings.Contains(out, "the change says 5000 bytes of "+tampered.SHA256) {
		t.Errorf("the tampered photo's refusal does not say why:\n%s", out)
	}
	// A picture that never comes holds the site's later changes back (they are
	// applied in order), and the office says so at warning level.
	for _, m := range []Message{
		{Site: a, Seq: 15, Kind: store.KindGardenImage, ID: garden, Ref: store.GlobalID(a, 1), Rec: rec(wireImage{Garden: garden,
			Company: store.GlobalID(a, 1), Object: "images/never.png", Size: 10, SHA256: good.SHA256, Coordinates: corners})},
		{Site: a, Seq: 16, Kind: store.KindCompany, ID: store.GlobalID(a, 2), Rec: rec(store.Company{ID: store.GlobalID(a, 2), Name: "behind"})},
	} {
		data, _ := json.Marshal(m)
		if _, err := js.Publish(ctx, OutSubject(a), data); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, "the office's warning of a change waiting for its picture", func() bool {
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, `"level":"warn"`) && strings.Contains(line, "waiting for the change's picture") {
				return true
			}
		}
		return false
	})
	if _, err := ost.Company(store.GlobalID(a, 2)); err == nil {
		t.Error("a change behind one waiting for its picture was applied out of order")
	}

	// The credentials allow nothing else at the hub: not another site's report
	// subject, not the hub's JetStream API.
	onc, err := nats.Connect(hub.ClientURL(), officeCredsOption(t, ost))
	if err != nil {
		t.Fatal(err)
	}
	defer onc.Close()
	sub, err := onc.SubscribeSync(StatusSubject(bb))
	if err != nil {
		t.Fatal(err)
	}
	_ = onc.Flush()
	time.Sleep(300 * time.Millisecond)
	_ = nc.Publish(StatusSubject(bb), []byte(`{"backlog_records":999}`))
	_ = nc.Flush()
	if m, err := sub.NextMsg(500 * time.Millisecond); err == nil {
		t.Errorf("farm-a published on farm-b's subject: %s", m.Data)
	}
	if _, err := nc.Request("$JS."+HubDomain+".API.STREAM.PURGE."+SiteStream(bb), nil, time.Second); err == nil {
		t.Error("farm-a purged farm-b's stream at the hub")
	}
}

func officeCredsOption(t *testing.T, st OfficeBackend) nats.Option {
	k, err := LoadKeys(st.Secret)
	if err != nil {
		t.Fatal(err)
	}
	j, seed, err := k.OfficeCreds()
	if err != nil {
		t.Fatal(err)
	}
	return nats.UserJWTAndSeed(j, string(seed))
}

// syncBuffer is a log sink several goroutines write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/gardend/gardend/store"
)

// change is a Change without its sequence and time, to compare.
type change struct {
	Kind    string
	ID, Ref uint64
	Deleted bool
}

func (c change) String() string {
	return fmt.Sprintf("%s %d/%d del=%v", c.Kind, c.ID, c.Ref, c.Deleted)
}

// feedAfter reads the changes above after and checks their sequences rise.
func feedAfter(t *testing.T, st store.ChangeFeed, after uint64) ([]change, uint64) {
	t.Helper()
	cs, err := st.ChangesAfter(after, 10000)
	if err != nil {
		t.Fatal(err)
	}
	out := []change{}
	last := after
	for _, c := range cs {
		if c.Seq <= last {
			t.Fatalf("sequence %d after %d", c.Seq, last)
		}
		last = c.Seq
		out = append(out, change{c.Kind, c.ID, c.Ref, c.Deleted})
	}
	return out, last
}

func wantChanges(t *testing.T, what string, got, want []change) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s: changes\n got %v\nwant %v", what, got, want)
	}
}

// testChangeFeedOff: without the feed on, writes record nothing.
func testChangeFeedOff(t *testing.T, h Harness) {
	st, _ := open(t, h)
	alice := mustUser(t, st, "alice")
	mustGarden(t, st, mustCompany(t, st, alice, "c"), "g")
	stats, err := st.ChangeStats()
	if err != nil || stats.On || stats.Records != 0 {
		t.Fatalf("ChangeStats = %+v, %v; want off and empty", stats, err)
	}
}

// testChangeFeedSnapshot: starting the feed enqueues every record, parents first,
// once.
func testChangeFeedSnapshot(t *testing.T, h Harness) {
	st, _ := open(t, h)
	alice := mustUser(t, st, "alice")
	bob := mustUser(t, st, "bob")
	c := mustCompany(t, st, alice, "c")
	g := mustGarden(t, st, c, "g")
	g2 := mustGarden(t, st, c, "g2")
	if _, err := st.SetGardenImage(g2.ID, "images/a.png", corners); err != nil {
		t.Fatal(err)
	}
	b, err := st.CreateBed(g.ID, uuidA, "north")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetGardenPermission(g.ID, alice.ID, "bob", store.LevelUser); err != nil {
		t.Fatal(err)
	}
	if err := st.PutBedValues(store.BedValues{Bed: b.ID, Garden: g.ID, At: st.Now(), Data: json.RawMessage(`{"x":1}`)}); err != nil {
		t.Fatal(err)
	}
	l, err := st.CreateLog(g.ID, alice.ID, store.LogPatch{Type: ptr(store.LogObservation), Title: ptr("aphids")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ph := photo(1)
	ph.Uploader = alice.ID
	if ph, err = st.AddPhoto(g.ID, l.ID, ph, 0, nil); err != nil {
		t.Fatal(err)
	}
	hist := historyForSnapshot(t, st, g, b)
	started, err := st.StartChangeFeed()
	if err != nil || !started {
		t.Fatalf("StartChangeFeed = %v, %v", started, err)
	}
	got, last := feedAfter(t, st, 0)
	wantChanges(t, "snapshot", got, append([]change{
		{store.KindUser, alice.ID, 0, false}, {store.KindUser, bob.ID, 0, false},
		{store.KindCompany, c.ID, 0, false},
		{store.KindGarden, g.ID, c.ID, false}, {store.KindGarden, g2.ID, c.ID, false},
		{store.KindGardenImage, g2.ID, c.ID, false},
		{store.KindBed, b.ID, g.ID, false},
		{store.KindCompanyPermission, c.ID, alice.ID, false},
		{store.KindGardenPermission, g.ID, bob.ID, false},
		{store.KindBedValues, b.ID, g.ID, false},
		{store.KindLog, l.ID, g.ID, false},
		{store.KindPhoto, ph.ID, l.ID, false},
	}, hist...))
	if started, err := st.StartChangeFeed(); err != nil || started {
		t.Fatalf("second StartChangeFeed = %v, %v", started, err)
	}
	if more, _ := feedAfter(t, st, last); len(more) != 0 {
		t.Errorf("a second start enqueued %v", more)
	}
	stats, err := st.ChangeStats()
	if err != nil || !stats.On || stats.Records != 12+len(hist) || stats.LastSeq != last || !stats.Oldest.Equal(st.Now()) {
		t.Errorf("ChangeStats = %+v, %v", stats, err)
	}
}

// testChangeFeedRecordsWrites: every write of a replicated record appends its change,
// deletions included, and nothing else does.
func testChangeFeedRecordsWrites(t *testing.T, h Harness) {
	st, _ := open(t, h)
	if _, err := st.StartChangeFeed(); err != nil {
		t.Fatal(err)
	}
	_, last := feedAfter(t, st, 0)
	step := func(what string, do func() []change) {
		t.Helper()
		want := do()
		var got []change
		got, last = feedAfter(t, st, last)
		wantChanges(t, what, got, want)
	}
	var alice, bob store.User
	var c store.Company
	var g store.Garden
	var b store.Bed
	step("create user", func() []change {
		alice = mustUser(t, st, "alice")
		return []change{{store.KindUser, alice.ID, 0, false}}
	})
	bob = mustUser(t, st, "bob")
	_, last = feedAfter(t, st, last)
	step("update user", func() []change {
		if _, err := st.UpdateUser(alice.ID, store.UserUpdate{FirstName: ptr("Alice")}); err != nil {
			t.Fatal(err)
		}
		return []change{{store.KindUser, alice.ID, 0, false}}
	})
	step("widgets", func() []change {
		if err := st.SaveWidgets(alice.ID, []byte(`{"a":1}`)); err != nil {
			t.Fatal(err)
		}
		return []change{{store.KindUser, alice.ID, 0, false}}
	})
	step("replace hash", func() []change {
		if ok, err := st.ReplacePasswordHash(alice.ID, "wrong", "new"); err != nil || ok {
			t.Fatalf("ReplacePasswordHash of a stale hash = %v, %v", ok, err)
		}
		if ok, err := st.ReplacePasswordHash(alice.ID, "h", "new"); err != nil || !ok {
			t.Fatalf("ReplacePasswordHash = %v, %v", ok, err)
		}
		return []change{{store.KindUser, alice.ID, 0, false}}
	})
	step("sessions are not replicated", func() []change {
		var d [store.DigestSize]byte
		d[0] = 1
		if err := st.CreateToken(alice.ID, d, st.Now().Add(3600e9)); err != nil {
			t.Fatal(err)
		}
		if _, err := st.RevokeUserTokens(alice.ID, nil); err != nil {
			t.Fatal(err)
		}
		return []change{}
	})
	step("create company", func() []change {
		c = mustCompany(t, st, alice, "c")
		return []change{{store.KindCompany, c.ID, 0, false}, {store.KindCompanyPermission, c.ID, alice.ID, false}}
	})
	step("create garden", func() []change {
		g = mustGarden(t, st, c, "g")
		return []change{{store.KindGarden, g.ID, c.ID, false}}
	})
	step("garden image", func() []change {
		if _, err := st.SetGardenImage(g.ID, "images/a.png", corners); err != nil {
			t.Fatal(err)
		}
		return []change{{store.KindGardenImage, g.ID, c.ID, false}}
	})
	step("create bed", func() []change {
		var err error
		if b, err = st.CreateBedUpTo(g.ID, uuidA, "n", 10); err != nil {
			t.Fatal(err)
		}
		return []change{{store.KindBed, b.ID, g.ID, false}}
	})
	step("bed values", func() []change {
		if err := st.PutBedValues(store.BedValues{Bed: b.ID, Garden: g.ID, At: st.Now(), Data: json.RawMessage(`[]`)}); err != nil {
			t.Fatal(err)
		}
		return []change{{store.KindBedValues, b.ID, g.ID, false}}
	})
	step("logs and tasks", func() []change {
		l, err := st.CreateLog(g.ID, alice.ID, store.LogPatch{Type: ptr(store.LogObservation), Title: ptr("aphids")}, nil)
		if err != nil {
			t.Fatal(err)
		}
		task, _, err := st.CreateLogOnce(g.ID, alice.ID, "k-1", store.LogPatch{Type: ptr(store.LogTask), Title: ptr("spray")}, nil)
		if err != nil {
			t.Fatal(err)
		}
		// A retry under the key writes nothing.
		if _, created, err := st.CreateLogOnce(g.ID, alice.ID, "k-1", store.LogPatch{Type: ptr(store.LogTask), Title: ptr("spray")}, nil); err != nil || created {
			t.Fatalf("CreateLogOnce again = %v, %v", created, err)
		}
		if _, err := st.UpdateLog(g.ID, task.ID, store.LogPatch{Status: ptr(store.LogDone)}, nil); err != nil {
			t.Fatal(err)
		}
		// An update that changes nothing records nothing.
		if _, err := st.UpdateLog(g.ID, task.ID, store.LogPatch{Status: ptr(store.LogDone)}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := st.DeleteLog(g.ID, l.ID, nil); err != nil {
			t.Fatal(err)
		}
		return []change{{store.KindLog, l.ID, g.ID, false}, {store.KindLog, task.ID, g.ID, false},
			{store.KindLog, task.ID, g.ID, false}, {store.KindLog, l.ID, g.ID, true}}
	})
	step("photos", func() []change {
		l, err := st.CreateLog(g.ID, alice.ID, store.LogPatch{Type: ptr(store.LogObservation), Title: ptr("blight")}, nil)
		if err != nil {
			t.Fatal(err)
		}
		p1, p2, p3 := photo(1), photo(2), photo(3)
		p1.Uploader, p2.Uploader, p3.Uploader = alice.ID, alice.ID, alice.ID
		p1.ThumbPath, p1.ThumbSize = "", 0
		if p1, err = st.AddPhoto(g.ID, l.ID, p1, 0, nil); err != nil {
			t.Fatal(err)
		}
		if p2, _, err = st.AddPhotoOnce(g.ID, l.ID, "k-2", p2, 0, nil); err != nil {
			t.Fatal(err)
		}
		// A retry under the key, a thumbnail that is there already, a photo past the
		// budget: nothing.
		if _, added, err := st.AddPhotoOnce(g.ID, l.ID, "k-2", p2, 0, nil); err != nil || added {
			t.Fatalf("AddPhotoOnce again = %v, %v", added, err)
		}
		if _, err := st.SetPhotoThumb(p2.ID, "photos/0000000000000000000000000000000a.jpg", 9); err != nil {
			t.Fatal(err)
		}
		if _, err := st.AddPhoto(g.ID, l.ID, p3, 1, nil); !errors.Is(err, store.ErrStorageFull) {
			t.Fatalf("a photo past the budget: %v", err)
		}
		if _, err := st.SetPhotoThumb(p1.ID, "photos/0000000000000000000000000000000b.jpg", 9); err != nil {
			t.Fatal(err)
		}
		if _, err := st.DeletePhoto(g.ID, l.ID, p1.ID, nil); err != nil {
			t.Fatal(err)
		}
		// Photos go with their log: the log's deletion says so.
		if _, err := st.DeleteLog(g.ID, l.ID, nil); err != nil {
			t.Fatal(err)
		}
		return []change{{store.KindLog, l.ID, g.ID, false}, {store.KindPhoto, p1.ID, l.ID, false},
			{store.KindPhoto, p2.ID, l.ID, false}, {store.KindPhoto, p1.ID, l.ID, false},
			{store.KindPhoto, p1.ID, l.ID, true}, {store.KindLog, l.ID, g.ID, true}}
	})
	step("permissions", func() []change {
		if _, err := st.SetCompanyPermission(c.ID, alice.ID, "bob", store.LevelUser); err != nil {
			t.Fatal(err)
		}
		if _, err := st.SetGardenPermission(g.ID, alice.ID, "bob", store.LevelAdmin); err != nil {
			t.Fatal(err)
		}
		if _, err := st.RemoveGardenPermission(g.ID, alice.ID, "bob"); err != nil {
			t.Fatal(err)
		}
		if _, err := st.RemoveCompanyPermission(c.ID, alice.ID, "bob"); err != nil {
			t.Fatal(err)
		}
		// Removing what is not there changes nothing.
		if _, err := st.RemoveCompanyPermission(c.ID, alice.ID, "bob"); err != nil {
			t.Fatal(err)
		}
		return []change{
			{store.KindCompanyPermission, c.ID, bob.ID, false}, {store.KindGardenPermission, g.ID, bob.ID, false},
			{store.KindGardenPermission, g.ID, bob.ID, true}, {store.KindCompanyPermission, c.ID, bob.ID, true},
		}
	})
	step("history, alerts and guidance", func() []change { return historyWrites(t, st, g, b, alice) })
	step("refused writes record nothing", func() []change {
		_, err := st.CreateBed(g.ID, uuidA, "again")
		wantErr(t, err, store.ErrConflict)
		_, err = st.CreateCompany(999, "ghost")
		wantErr(t, err, store.ErrNotFound)
		return []change{}
	})
	step("deletions", func() []change {
		if _, err := st.DeleteBed(g.ID, b.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := st.DeleteGarden(c.ID, g.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := st.DeleteCompany(c.ID); err != nil {
			t.Fatal(err)
		}
		return []change{{store.KindBed, b.ID, g.ID, true}, {store.KindGarden, g.ID, c.ID, true}, {store.KindCompany, c.ID, 0, true}}
	})
}

// testChangeFeedTrimAndCompact: trimming drops what the other side has; compaction
// keeps the first change of each record.
func testChangeFeedTrimAndCompact(t *testing.T, h Harness) {
	st, _ := open(t, h)
	if _, err := st.StartChangeFeed(); err != nil {
		t.Fatal(err)
	}
	alice := mustUser(t, st, "alice")
	c := mustCompany(t, st, alice, "c") // company, permission
	for _, name := range []string{"A", "B", "C"} {
		if _, err := st.UpdateUser(alice.ID, store.UserUpdate{FirstName: ptr(name)}); err != nil {
			t.Fatal(err)
		}
	}
	g := mustGarden(t, st, c, "g")
	all, err := st.ChangesAfter(0, 100)
	if err != nil || len(all) != 7 {
		t.Fatalf("ChangesAfter = %d changes, %v", len(all), err)
	}
	// Above the first change: alice's three updates repeat her first change
	// (which is not above it), so only the second and third updates go.
	n, err := st.CompactChanges(all[0].Seq)
	if err != nil || n != 2 {
		t.Fatalf("CompactChanges = %d, %v; want 2", n, err)
	}
	got, _ := feedAfter(t, st, 0)
	wantChanges(t, "compacted", got, []change{
		{store.KindUser, alice.ID, 0, false}, {store.KindCompany, c.ID, 0, false},
		{store.KindCompanyPermission, c.ID, alice.ID, false}, {store.KindUser, alice.ID, 0, false},
		{store.KindGarden, g.ID, c.ID, false},
	})
	if n, err := st.CompactChanges(0); err != nil || n != 1 {
		t.Fatalf("CompactChanges(0) = %d, %v; want 1", n, err)
	}
	left, err := st.ChangesAfter(0, 100)
	if err != nil || len(left) != 4 {
		t.Fatalf("after compaction: %d, %v", len(left), err)
	}
	if n, err := st.TrimChanges(left[1].Seq); err != nil || n != 2 {
		t.Fatalf("TrimChanges = %d, %v", n, err)
	}
	got, _ = feedAfter(t, st, 0)
	wantChanges(t, "trimmed", got, []change{{store.KindCompanyPermission, c.ID, alice.ID, false}, {store.KindGarden, g.ID, c.ID, false}})
	stats, err := st.ChangeStats()
	if err != nil || stats.Records != 2 || stats.LastSeq != all[len(all)-1].Seq {
		t.Errorf("ChangeStats = %+v, %v", stats, err)
	}
}

// testChangeFeedFollowsCommits: a reader that follows the feed while several nodes
// write never skips a change: a change becomes visible only after every change of a
// lower sequence.
func testChangeFeedFollowsCommits(t *testing.T, h Harness) {
	nodes, _ := openNodes(t, h, 3)
	if _, err := nodes[0].StartChangeFeed(); err != nil {
		t.Fatal(err)
	}
	owner := mustUser(t, nodes[0], "owner")
	const writers, each = 6, 25
	var wg sync.WaitGroup
	done := make(chan struct{})
	for w := range writers {
		wg.Go(func() {
			st := nodes[w%len(nodes)]
			for i := range each {
				if _, err := st.CreateCompany(owner.ID, fmt.Sprintf("c%d-%d", w, i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	go func() { wg.Wait(); close(done) }()
	seen := map[uint64]bool{}
	var cursor uint64
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		default:
		}
		cs, err := nodes[2].ChangesAfter(cursor, 50)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			cursor = c.Seq
			seen[c.Seq] = true
		}
	}
	for {
		cs, err := nodes[2].ChangesAfter(cursor, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) == 0 {
			break
		}
		for _, c := range cs {
			cursor = c.Seq
			seen[c.Seq] = true
		}
	}
	all, err := nodes[0].ChangesAfter(0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	missed := 0
	for _, c := range all {
		if !seen[c.Seq] && c.Kind == store.KindCompany {
			missed++
		}
	}
	if companies := len(all) - 1; companies != 2*writers*each || missed > 0 {
		t.Errorf("%d changes (want %d), %d skipped by a reader following the feed", companies, 2*writers*each, missed)
	}
}

package scan

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/bolt"
)

func openBolt(t *testing.T, now func() time.Time) *bolt.Store {
	t.Helper()
	st, err := bolt.Open(filepath.Join(t.TempDir(), bolt.FileName), bolt.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	})
	return st
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func noKeep(*spatial.Bed) error                 { return nil }
func nameOf(b store.Bed, _ *spatial.Bed) string { return b.Name }

// TestReaderRetentionAndLease: the lease holder drops points past the retention;
// a node whose lease another took stops, and takes it again once free; on shutdown
// the lease is released.
func TestReaderRetentionAndLease(t *testing.T) {
	now := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
	st := openBolt(t, func() time.Time { return now })
	u, err := st.CreateUser(store.NewUser{Username: "u", FirstName: "F", LastName: "L", PasswordHash: "h"})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := st.CreateCompany(u.ID, "c")
	g, _ := st.CreateGarden(c.ID, "g")
	b, _ := st.CreateBed(g.ID, "3fa85f64-5717-4562-b3fc-2c963f66afa6", "Bed")
	var rs []store.BedReading
	for d := 9; d >= 0; d-- { // oldest first: an older measurement is not new
		at := now.Add(-time.Duration(d) * 24 * time.Hour)
		h := 0.5
		p := store.PlantReading{ID: "p", Measurement: "m", Stamp: at, Values: store.HistoryValues{SoilHumidity: &h}}
		rs = append(rs, store.BedReading{Bed: b.ID, Read: now, At: at, Plants: []store.PlantReading{p}})
	}
	if _, err := st.RecordReadings(rs); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Retention: 72 * time.Hour, Node: "a", Lease: 90 * time.Millisecond}
	r := NewReader(st, nil, noKeep, nameOf, NewRecorder(st), cfg, st.Now, zerolog.Nop())
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { r.Run(ctx) })
	count := func() int {
		pts, err := st.PlantHistory(g.ID, b.ID, "p", time.Unix(0, 0), now.Add(time.Hour), 0)
		if err != nil {
			t.Fatal(err)
		}
		return len(pts)
	}
	waitFor(t, "old points dropped", func() bool { return count() == 4 }) // now and 1–3 days back
	waitFor(t, "the lease held", r.Holding)

	// Another node takes the lease (as if this one's had run out): this one stops.
	if err := st.ReleaseLease(LeaseName, "a"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := st.AcquireLease(LeaseName, "b", time.Hour); !ok {
		t.Fatal("b could not take the free lease")
	}
	waitFor(t, "the node without the lease to stop", func() bool { return !r.Holding() })
	if err := st.ReleaseLease(LeaseName, "b"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the lease taken again", r.Holding)
	cancel()
	wg.Wait()
	if ok, _ := st.AcquireLease(LeaseName, "b", time.Hour); !ok {
		t.Error("the lease was not released on shutdown")
	}
}

// askedSource answers every bed empty and remembers which projects it was asked for.
type askedSource struct {
	mu    sync.Mutex
	asked map[string]int
}

func (s *askedSource) Bed(_ context.Context, uuid string) (spatial.Bed, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked[uuid]++
	return spatial.Bed{ProjectUUID: uuid}, nil
}

func (s *askedSource) count(uuid string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asked[uuid]
}

// TestReaderSkipsReplicaBeds: a replica bed (another site's, kept here by the sync)
// is never read from this site's spatial server, by ReadAll or on schedule: its
// history comes from its home.
func TestReaderSkipsReplicaBeds(t *testing.T) {
	st := openBolt(t, nil)
	u, err := st.CreateUser(store.NewUser{Username: "u", FirstName: "F", LastName: "L", PasswordHash: "h"})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := st.CreateCompany(u.ID, "c")
	g, _ := st.CreateGarden(c.ID, "g")
	const localUUID, replicaUUID = "3fa85f64-5717-4562-b3fc-2c963f66afa6", "4fa85f64-5717-4562-b3fc-2c963f66afa6"
	if _, err := st.CreateBed(g.ID, localUUID, "Bed"); err != nil {
		t.Fatal(err)
	}
	gid := func(id uint64) uint64 { return store.GlobalID(3, id) }
	if _, err := st.ApplyReplica(3, "farm-a", func(w store.ReplicaWriter, _ uint64) (uint64, error) {
		return 1, errors.Join(w.PutCompany(store.Company{ID: gid(1), Name: "Farm"}),
			w.PutGarden(store.Garden{ID: gid(2), Company: gid(1), Name: "Field"}),
			w.PutBed(store.Bed{ID: gid(3), Garden: gid(2), UUID: replicaUUID, Name: "north"}))
	}); err != nil {
		t.Fatal(err)
	}
	src := &askedSource{asked: map[string]int{}}
	r := NewReader(st, src, noKeep, nameOf, NewRecorder(st), Config{Interval: 20 * time.Millisecond, Node: "a", Lease: time.Minute}, st.Now, zerolog.Nop())
	if err := r.ReadAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { r.Run(ctx) })
	waitFor(t, "the local bed read on schedule", func() bool { return src.count(localUUID) >= 3 })
	cancel()
	wg.Wait()
	if n := src.count(replicaUUID); n != 0 {
		t.Errorf("the replica bed was read %d times from this site's spatial server", n)
	}
}

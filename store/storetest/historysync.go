package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/gardend/gardend/store"
)

// History, alerts and guidance in the change feed and as replicas.

// historyForSnapshot records two days of a bed, which raise alerts, and sets the
// garden's guidance; it returns the changes a first snapshot has of them: whole days,
// alerts, guidance.
func historyForSnapshot(t *testing.T, st store.Backend, g store.Garden, b store.Bed) []change {
	t.Helper()
	now := st.Now()
	day1, day2 := now.Add(-26*time.Hour), now.Add(-time.Hour)
	mustRecord(t, st, reading(b, day1, values(0.5, 0, 0, 0), plant("p1", "m1", day1, values(0.5, 0, 0, 0))))
	mustRecord(t, st, reading(b, day2, values(0.1, 0, 0, 0), plant("p1", "m2", day2, values(0.1, 0, 0, 0))))
	if _, _, err := st.SetGuidance(g.ID, store.DefaultGuidance()); err != nil {
		t.Fatal(err)
	}
	out := []change{
		{store.KindHistory, b.ID, store.HistorySpanRef(store.HistoryDay(day1), store.WholeDay), false},
		{store.KindHistory, b.ID, store.HistorySpanRef(store.HistoryDay(day2), store.WholeDay), false},
	}
	for _, a := range alertsByID(t, st, g.ID) {
		out = append(out, change{store.KindAlert, a.ID, g.ID, false})
	}
	if len(out) != 4 {
		t.Fatalf("want two alerts raised (the bed's and the plant's), have changes %v", out)
	}
	return append(out, change{store.KindGuidance, g.ID, g.Company, false})
}

// alertsByID lists a garden's open and closed alerts by id.
func alertsByID(t *testing.T, st store.AlertStore, gardenID uint64) []store.Alert {
	t.Helper()
	as := append(mustAlerts(t, st, gardenID, true), mustAlerts(t, st, gardenID, false)...)
	slices.SortFunc(as, func(a, b store.Alert) int { return int(a.ID) - int(b.ID) })
	return as
}

// historyWrites records readings over two hours, a task of an alert and new
// guidance, checks the changes of the guidance (whose alerts close in any order) and
// returns the others.
func historyWrites(t *testing.T, st store.Backend, g store.Garden, b store.Bed, author store.User) []change {
	t.Helper()
	now := st.Now()
	h1, h2 := now.Add(-90*time.Minute).Truncate(time.Hour).Add(30*time.Minute), now.Add(-30*time.Minute)
	if store.SpanSlot(h1) == store.SpanSlot(h2) {
		t.Fatalf("%v and %v in one hour", h1, h2)
	}
	rec := mustRecord(t, st, reading(b, now, values(0.1, 0, 0, 0),
		plant("p1", "m1", h1, values(0.1, 0, 0, 0)), plant("p2", "m2", h2, values(0.5, 0, 0, 0))))
	if rec.Raised != 2 {
		t.Fatalf("Recorded = %+v; want the bed's and p1's alerts", rec)
	}
	// The same measurements again: nothing new, nothing recorded.
	mustRecord(t, st, reading(b, now.Add(time.Minute), values(0.1, 0, 0, 0),
		plant("p1", "m1", h1, values(0.1, 0, 0, 0)), plant("p2", "m2", h2, values(0.5, 0, 0, 0))))
	as := alertsByID(t, st, g.ID)
	task, err := st.CreateLog(g.ID, author.ID, store.LogPatch{Type: ptr(store.LogTask), Title: ptr("water")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetAlertTask(g.ID, as[0].ID, task.ID); err != nil {
		t.Fatal(err)
	}
	want := []change{
		{store.KindHistory, b.ID, store.HistorySpanRef(store.HistoryDay(h1), store.SpanSlot(h1)), false},
		{store.KindHistory, b.ID, store.HistorySpanRef(store.HistoryDay(h2), store.SpanSlot(h2)), false},
		{store.KindAlert, as[0].ID, g.ID, false}, {store.KindAlert, as[1].ID, g.ID, false},
		{store.KindLog, task.ID, g.ID, false}, {store.KindAlert, as[0].ID, g.ID, false},
	}
	return want
}

// testChangeFeedGuidance: new guidance is a change of the garden's, and the alerts
// it closes are changes too.
func testChangeFeedGuidance(t *testing.T, h Harness) {
	f := newFarm(t, h)
	st := f.st
	if _, err := st.StartChangeFeed(); err != nil {
		t.Fatal(err)
	}
	mustRecord(t, st, reading(f.bed, f.t0, values(0.1, 0, 0, 0), plant("p1", "m1", f.t0, values(0.1, 0, 0, 0))))
	_, last := feedAfter(t, st, 0)
	g := store.DefaultGuidance()
	g.Thresholds.SoilHumidityMin = 0.05
	if _, rec, err := st.SetGuidance(f.garden.ID, g); err != nil || rec.Closed != 2 {
		t.Fatalf("SetGuidance = %+v, %v; want two alerts closed", rec, err)
	}
	got, _ := feedAfter(t, st, last)
	as := alertsByID(t, st, f.garden.ID)
	want := []change{{store.KindGuidance, f.garden.ID, f.garden.Company, false},
		{store.KindAlert, as[0].ID, f.garden.ID, false}, {store.KindAlert, as[1].ID, f.garden.ID, false}}
	if len(got) == 3 {
		slices.SortFunc(got[1:], func(a, b change) int { return int(a.ID) - int(b.ID) })
	}
	wantChanges(t, "guidance", got, want)
}

// replicaFarm writes site 7's company, garden and bed here.
func replicaFarm(t *testing.T, st store.Backend) (store.Garden, store.Bed) {
	t.Helper()
	c := store.Company{ID: gid(1), Name: "Farm A"}
	g := store.Garden{ID: gid(2), Name: "Field", Company: c.ID}
	b := store.Bed{ID: gid(3), Garden: g.ID, UUID: uuidA, Name: "north"}
	apply(t, st, 1, func(w store.ReplicaWriter) error {
		return errors.Join(w.PutCompany(c), w.PutGarden(g), w.PutBed(b))
	})
	return g, b
}

// testReplicaHistory: spans of a bed replace what is here in their time and read
// back as the home's history; alerts and guidance read as the home's; nothing
// replicated is recorded in the change feed, and a reading of a replica bed records
// nothing.
func testReplicaHistory(t *testing.T, h Harness) {
	home := newFarm(t, h)
	st, _ := open(t, h)
	if _, err := st.StartChangeFeed(); err != nil {
		t.Fatal(err)
	}
	g, b := replicaFarm(t, st)
	_, last := feedAfter(t, st, 0)

	// Two days at the home: hourly points of the bed and two plants, the second day
	// ending early.
	t0 := home.t0.Truncate(24 * time.Hour)
	for i := range 30 {
		at := t0.Add(time.Duration(i) * time.Hour)
		mustRecord(t, home.st, reading(home.bed, at, values(0.3+float64(i)/100, 1, 0, -1),
			plant("p1", "m1-"+at.String(), at, values(0.2, 3, 1, 0)), plant("p2", "m2-"+at.String(), at, values(0.5, 0, 0, 0))))
	}
	day := store.HistoryDay(t0)
	copySpan := func(d uint32, slot uint8) {
		t.Helper()
		sp, err := home.st.HistorySpan(home.bed.ID, d, slot)
		if err != nil {
			t.Fatal(err)
		}
		sp.Bed, sp.Garden = b.ID, g.ID
		apply(t, st, 2, func(w store.ReplicaWriter) error { return w.PutHistorySpan(sp) })
	}
	copySpan(day, store.WholeDay)
	for slot := range uint8(6) {
		copySpan(day+1, slot)
	}
	same := func(what string) {
		t.Helper()
		for _, plant := range []string{"", "p1", "p2"} {
			want := history(t, home.st, home, plant)
			var got []store.HistoryPoint
			var err error
			from, until := time.Unix(0, 0), home.clock.Now().Add(365*24*time.Hour)
			if plant == "" {
				got, err = st.BedHistory(g.ID, b.ID, from, until, 0)
			} else {
				got, err = st.PlantHistory(g.ID, b.ID, plant, from, until, 0)
			}
			if err != nil {
				t.Fatal(err)
			}
			if pointsText(got) != pointsText(want) {
				t.Errorf("%s: plant %q here\n%s\nat home\n%s", what, plant, pointsText(got), pointsText(want))
			}
		}
	}
	same("copied")

	// An hour sent again with one plant and fewer points replaces that hour only.
	sp, err := home.st.HistorySpan(home.bed.ID, day, 7)
	if err != nil || len(sp.Series) != 3 {
		t.Fatalf("HistorySpan = %+v, %v; want the bed and two plants", sp, err)
	}
	sp.Bed, sp.Garden, sp.Series = b.ID, g.ID, sp.Series[1:2]
	apply(t, st, 3, func(w store.ReplicaWriter) error { return w.PutHistorySpan(sp) })
	bedPts, err := st.BedHistory(g.ID, b.ID, t0, t0.Add(48*time.Hour), 0)
	if err != nil || len(bedPts) != 29 {
		t.Errorf("bed points after an hour without it: %d, %v; want 29", len(bedPts), err)
	}
	copySpan(day, 7)
	same("hour sent again")

	// A parent missing, a span out of its time: refused.
	for _, bad := range []store.HistorySpan{
		{Bed: gid(99), Garden: g.ID, Day: day, Slot: store.WholeDay},
		{Bed: b.ID, Garden: gid(98), Day: day, Slot: store.WholeDay},
	} {
		_, err := st.ApplyReplica(replicaSite, "farm-a", func(w store.ReplicaWriter, cur uint64) (uint64, error) {
			return cur + 1, w.PutHistorySpan(bad)
		})
		wantErr(t, err, store.ErrNotFound)
	}
	whole, err := home.st.HistorySpan(home.bed.ID, day, store.WholeDay)
	if err != nil {
		t.Fatal(err)
	}
	outside := store.HistorySpan{Bed: b.ID, Garden: g.ID, Day: day, Slot: 2, Series: whole.Series}
	_, err = st.ApplyReplica(replicaSite, "farm-a", func(w store.ReplicaWriter, cur uint64) (uint64, error) {
		return cur + 1, w.PutHistorySpan(outside)
	})
	wantErr(t, err, store.ErrInvalid)
	same("after refusals")

	// Alerts: as the home has them, open and closed; a task not here reads as none.
	homeAlerts := alertsByID(t, home.st, home.garden.ID)
	if len(homeAlerts) == 0 {
		t.Fatal("no alerts at the home")
	}
	task := gid(77)
	apply(t, st, 4, func(w store.ReplicaWriter) error {
		var errs []error
		for i, a := range homeAlerts {
			a.ID, a.Garden, a.Bed = gid(a.ID), g.ID, b.ID
			if i == 0 {
				a.Task = &task
			}
			errs = append(errs, w.PutAlert(a))
		}
		return errors.Join(errs...)
	})
	open, err := st.Alerts(g.ID, true)
	if err != nil || len(open) != len(mustAlerts(t, home.st, home.garden.ID, true)) {
		t.Errorf("open replica alerts %v, %v; want %d", alertsText(open), err, len(mustAlerts(t, home.st, home.garden.ID, true)))
	}
	for _, a := range open {
		if a.Company != g.Company || a.Task != nil || a.BedName != "north" {
			t.Errorf("replica alert %+v", a)
		}
	}
	if all, err := st.OpenAlerts(nil); err != nil || len(all) != len(open) {
		t.Errorf("OpenAlerts = %d, %v", len(all), err)
	}
	// Closing it at home closes it here.
	first := homeAlerts[0]
	closed := first.Since.Add(time.Hour)
	first.ID, first.Garden, first.Bed, first.Closed = gid(first.ID), g.ID, b.ID, &closed
	apply(t, st, 5, func(w store.ReplicaWriter) error { return w.PutAlert(first) })
	if got, err := st.Alerts(g.ID, true); err != nil || len(got) != len(open)-1 {
		t.Errorf("open after a close: %d, %v; want %d", len(got), err, len(open)-1)
	}
	if got, err := st.Alert(g.ID, first.ID); err != nil || got.Closed == nil || !got.Closed.Equal(closed) {
		t.Errorf("closed replica alert %+v, %v", got, err)
	}
	_, err = st.ApplyReplica(replicaSite, "farm-a", func(w store.ReplicaWriter, cur uint64) (uint64, error) {
		a := first
		a.ID, a.Bed = gid(500), gid(99)
		return cur + 1, w.PutAlert(a)
	})
	wantErr(t, err, store.ErrNotFound)

	// Guidance.
	gd := store.DefaultGuidance()
	gd.Thresholds.Water = 5
	gd.Advice["tomato"] = map[store.AlertKind]store.Advice{store.AlertWater: {Title: "Water", Steps: []string{"Now."}}}
	apply(t, st, 6, func(w store.ReplicaWriter) error { return w.PutGuidance(g.ID, gd) })
	if got, err := st.Guidance(g.ID); err != nil || got.Thresholds.Water != 5 || got.Advice["tomato"][store.AlertWater].Title != "Water" {
		t.Errorf("replica guidance %+v, %v", got, err)
	}
	_, err = st.ApplyReplica(replicaSite, "farm-a", func(w store.ReplicaWriter, cur uint64) (uint64, error) {
		return cur + 1, w.PutGuidance(gid(98), gd)
	})
	wantErr(t, err, store.ErrNotFound)

	// A reading of the replica bed here records nothing.
	before := history(t, st, &farm{clock: home.clock, garden: g, bed: b}, "p1")
	if rec, err := st.RecordReading(reading(b, home.clock.Now(), values(0.01, 9, 9, 9),
		plant("p1", "local", home.clock.Now(), values(0.01, 9, 9, 9)))); err != nil || rec != (store.Recorded{}) {
		t.Errorf("RecordReading of a replica bed = %+v, %v; want nothing", rec, err)
	}
	if after := history(t, st, &farm{clock: home.clock, garden: g, bed: b}, "p1"); len(after) != len(before) {
		t.Errorf("a reading of a replica bed kept %d points", len(after)-len(before))
	}
	if more, _ := feedAfter(t, st, last); len(more) != 0 {
		t.Errorf("replicas recorded in the change feed: %v", more)
	}

	// The bed's deletion takes its history and alerts.
	apply(t, st, 7, func(w store.ReplicaWriter) error { return w.DeleteBed(b.ID) })
	if as, err := st.Alerts(g.ID, false); err != nil || len(as) != 0 {
		t.Errorf("alerts after the bed's deletion: %v, %v", alertsText(as), err)
	}
}

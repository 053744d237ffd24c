package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gardend/gardend/store"
)

// History, alerts, guidance and leases: what a read of a bed leaves behind.

// farm is a garden with two beds and a reader; t0 is a measurement's stamp.
type farm struct {
	st             store.Backend
	clock          *Clock
	owner, other   store.User
	garden, second store.Garden
	bed, bed2      store.Bed
	t0             time.Time
}

func newFarm(t *testing.T, h Harness) *farm {
	t.Helper()
	st, clock := open(t, h)
	return farmOn(t, st, clock)
}

func farmOn(t *testing.T, st store.Backend, clock *Clock) *farm {
	t.Helper()
	f := &farm{st: st, clock: clock, t0: clock.Now().Add(-48 * time.Hour).Truncate(time.Second)}
	f.owner = mustUser(t, st, "owner")
	f.other = mustUser(t, st, "other")
	c := mustCompany(t, st, f.owner, "Farm")
	f.garden = mustGarden(t, st, c, "North")
	f.second = mustGarden(t, st, mustCompany(t, st, f.other, "Other"), "South")
	var err error
	if f.bed, err = st.CreateBed(f.garden.ID, uuidA, "Bed 6"); err != nil {
		t.Fatal(err)
	}
	if f.bed2, err = st.CreateBed(f.second.ID, uuidB, ""); err != nil {
		t.Fatal(err)
	}
	return f
}

// values builds HistoryValues: humidity (<0: missing), then health levels by kind
// ("" skips it).
func values(humidity float64, water, nutrients, diseases int64) store.HistoryValues {
	v := store.HistoryValues{}
	if humidity >= 0 {
		v.SoilHumidity = &humidity
	}
	for _, h := range []struct {
		t string
		l int64
	}{{"water", water}, {"nutrients", nutrients}, {"diseases", diseases}} {
		if h.l >= 0 {
			v.Health = append(v.Health, store.HealthLevel{Type: h.t, Level: h.l})
		}
	}
	return v
}

func plant(id, measurement string, stamp time.Time, v store.HistoryValues) store.PlantReading {
	return store.PlantReading{ID: id, Measurement: measurement, Stamp: stamp, Species: "tomato", Values: v}
}

// reading is a read of bed at read showing plants, summarised as summary.
func reading(bed store.Bed, read time.Time, summary store.HistoryValues, plants ...store.PlantReading) store.BedReading {
	return store.BedReading{Bed: bed.ID, Name: "read name", Read: read, At: store.BedReadingAt(plants, read),
		Species: "tomato", Summary: summary, Plants: plants}
}

func mustRecord(tb testing.TB, st store.HistoryStore, r store.BedReading) store.Recorded {
	tb.Helper()
	rec, err := st.RecordReading(r)
	if err != nil {
		tb.Fatal(err)
	}
	return rec
}

func pointsText(pts []store.HistoryPoint) string {
	var b strings.Builder
	for _, p := range pts {
		fmt.Fprintf(&b, "%s", p.At.Format("01-02T15:04:05.000000"))
		if p.SoilHumidity != nil {
			fmt.Fprintf(&b, " h=%v", *p.SoilHumidity)
		}
		if p.Yield != nil {
			fmt.Fprintf(&b, " y=%v", *p.Yield)
		}
		if p.HarvestWeeks != nil {
			fmt.Fprintf(&b, " w=%d", *p.HarvestWeeks)
		}
		for _, h := range p.Health {
			fmt.Fprintf(&b, " %s=%d", h.Type, h.Level)
		}
		if p.Plants != nil {
			fmt.Fprintf(&b, " n=%d", *p.Plants)
		}
		b.WriteString("; ")
	}
	return b.String()
}

func history(tb testing.TB, st store.HistoryStore, f *farm, plant string) []store.HistoryPoint {
	tb.Helper()
	var pts []store.HistoryPoint
	var err error
	from, until := time.Unix(0, 0), f.clock.Now().Add(365*24*time.Hour)
	if plant == "" {
		pts, err = st.BedHistory(f.garden.ID, f.bed.ID, from, until, 0)
	} else {
		pts, err = st.PlantHistory(f.garden.ID, f.bed.ID, plant, from, until, 0)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return pts
}

// testHistoryRecordsEachMeasurementOnce: a plant's point is kept when its
// measurement is new (a new uuid or a newer stamp), never twice for the same one,
// never for an older one; a bed point whenever a plant's was, dated by the newest.
func testHistoryRecordsEachMeasurementOnce(t *testing.T, h Harness) {
	f := newFarm(t, h)
	t0, read := f.t0, f.clock.Now()
	sum := values(0.5, 1, 0, 0)
	sum.Plants = ptr(int64(2))
	exact := 0.123456789 // not in thousandths: kept as a float
	pa := plant("p-a", "m-a", t0, store.HistoryValues{SoilHumidity: &exact, Yield: ptr(1.25), HarvestWeeks: ptr(int64(3)),
		Health: []store.HealthLevel{{Type: "water", Level: 1}, {Type: "frost", Level: -2}}})
	pb := plant("p-b", "m-b", time.Time{}, values(-1, -1, -1, -1)) // no stamp, no values
	if rec := mustRecord(t, f.st, reading(f.bed, read, sum, pa, pb)); rec.Plants != 2 || !rec.Bed {
		t.Fatalf("first read recorded %+v", rec)
	}
	// The same measurements read again, later, by another reader: nothing new.
	if rec := mustRecord(t, f.st, reading(f.bed, read.Add(time.Minute), sum, pa, pb)); rec != (store.Recorded{}) {
		t.Fatalf("the same measurements again recorded %+v", rec)
	}
	// a: the same geometry with a newer stamp; b: a new geometry (no stamp again).
	pa2 := pa
	pa2.Stamp, pa2.Values = t0.Add(time.Hour), values(0.4, 2, 0, 0)
	pb2 := plant("p-b", "m-b2", time.Time{}, values(0.3, -1, -1, -1))
	read2 := read.Add(2 * time.Minute)
	if rec := mustRecord(t, f.st, reading(f.bed, read2, values(0.35, 1, 0, 0), pa2, pb2)); rec.Plants != 2 || !rec.Bed {
		t.Fatalf("second scan recorded %+v", rec)
	}
	// An older measurement coming back (the newer one was deleted) is not new.
	if rec := mustRecord(t, f.st, reading(f.bed, read2.Add(time.Minute), sum, pa, pb2)); rec != (store.Recorded{}) {
		t.Fatalf("an older measurement recorded %+v", rec)
	}
	ts := func(t time.Time) string { return t.Format("01-02T15:04:05.000000") }
	want := ts(t0) + " h=0.123456789 y=1.25 w=3 water=1 frost=-2; " + ts(t0.Add(time.Hour)) + " h=0.4 water=2 nutrients=0 diseases=0; "
	if got := pointsText(history(t, f.st, f, "p-a")); got != want {
		t.Errorf("plant a:\n got %s\nwant %s", got, want)
	}
	want = ts(read) + "; " + ts(read2) + " h=0.3; "
	if got := pointsText(history(t, f.st, f, "p-b")); got != want {
		t.Errorf("plant b (no stamps: dated when read):\n got %s\nwant %s", got, want)
	}
	// The bed's points: the first dated by b's read time (newer than a's stamp), the
	// second by b's second read.
	want = ts(read) + " h=0.5 water=1 nutrients=0 diseases=0 n=2; " + ts(read2) + " h=0.35 water=1 nutrients=0 diseases=0; "
	if got := pointsText(history(t, f.st, f, "")); got != want {
		t.Errorf("bed:\n got %s\nwant %s", got, want)
	}

	// Ranges: from inclusive, until exclusive; another garden's bed is not found; a
	// plant without points has none.
	pts, err := f.st.PlantHistory(f.garden.ID, f.bed.ID, "p-a", t0.Add(time.Hour), t0.Add(time.Hour+time.Microsecond), 0)
	if err != nil || len(pts) != 1 || !pts[0].At.Equal(t0.Add(time.Hour)) {
		t.Errorf("range of one instant: %v, %v", pointsText(pts), err)
	}
	if pts, err := f.st.PlantHistory(f.garden.ID, f.bed.ID, "p-a", t0, t0, 0); err != nil || len(pts) != 0 {
		t.Errorf("empty range: %v, %v", pointsText(pts), err)
	}
	if _, err := f.st.BedHistory(f.second.ID, f.bed.ID, t0, read, 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("bed under another garden: %v", err)
	}
	if pts, err := f.st.PlantHistory(f.garden.ID, f.bed.ID, "nobody", t0, read, 0); err != nil || pts == nil || len(pts) != 0 {
		t.Errorf("unknown plant: %v, %v", pts, err)
	}
	if _, err := f.st.PlantHistory(f.garden.ID, f.bed.ID, "p-a", time.Unix(0, 0), read.Add(time.Hour), 1); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("two points past a limit of one: %v", err)
	}

	// Bad readings are refused whole.
	for name, r := range map[string]store.BedReading{
		"no bed":        {Read: read, At: read},
		"twice a plant": reading(f.bed, read, sum, pa, pa),
		"empty id":      reading(f.bed, read, sum, plant("", "m", t0, sum)),
		"NaN":           reading(f.bed, read, store.HistoryValues{Yield: ptr(nan())}),
	} {
		if _, err := f.st.RecordReading(r); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// A bed deleted since it was read records nothing, without an error; its history
	// went with it.
	if _, err := f.st.DeleteBed(f.garden.ID, f.bed.ID); err != nil {
		t.Fatal(err)
	}
	pa3 := pa2
	pa3.Stamp = t0.Add(2 * time.Hour)
	if rec, err := f.st.RecordReading(reading(f.bed, read2, sum, pa3)); err != nil || rec != (store.Recorded{}) {
		t.Errorf("reading of a deleted bed: %+v, %v", rec, err)
	}
	again, err := f.st.CreateBed(f.garden.ID, uuidA, "")
	if err != nil {
		t.Fatal(err)
	}
	if pts, _ := f.st.PlantHistory(f.garden.ID, again.ID, "p-a", time.Unix(0, 0), read2, 0); len(pts) != 0 {
		t.Errorf("a bed registered again inherits %s", pointsText(pts))
	}
}

func nan() float64 { var z float64; return z / z }

// testHistoryReadOnceAcrossNodes: the same measurements read at once by readers on
// every node (a stream, a plants request, the background reader) are kept once.
func testHistoryReadOnceAcrossNodes(t *testing.T, h Harness) {
	nodes, clock := openNodes(t, h, 4)
	f := farmOn(t, nodes[0], clock)
	for scan := range 3 {
		stamp := f.t0.Add(time.Duration(scan) * time.Hour)
		var plants []store.PlantReading
		for i := range 12 {
			plants = append(plants, plant(fmt.Sprintf("p-%02d", i), fmt.Sprintf("m-%02d", i), stamp, values(0.5, int64(scan), 0, 0)))
		}
		var recorded, beds atomic.Int64
		var fns []func()
		for i := range 8 {
			st := nodes[i%len(nodes)]
			fns = append(fns, func() {
				rec, err := st.RecordReading(reading(f.bed, clock.Now(), values(0.5, int64(scan), 0, 0), plants...))
				if err != nil {
					t.Error(err)
				}
				recorded.Add(int64(rec.Plants))
				if rec.Bed {
					beds.Add(1)
				}
			})
		}
		together(fns...)
		if recorded.Load() != 12 || beds.Load() != 1 {
			t.Fatalf("scan %d: %d plant points and %d bed points recorded by 8 readers, want 12 and 1", scan, recorded.Load(), beds.Load())
		}
	}
	for _, n := range nodes {
		if pts := history(t, n, f, "p-07"); len(pts) != 3 {
			t.Errorf("plant history %s", pointsText(pts))
		}
		if pts := history(t, n, f, ""); len(pts) != 3 {
			t.Errorf("bed history %s", pointsText(pts))
		}
	}
}

// testHistoryRetention: points before a time are dropped, whole days and part of
// the day the time falls in; the rest stays.
func testHistoryRetention(t *testing.T, h Harness) {
	f := newFarm(t, h)
	day0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var rs []store.BedReading
	for i := range 72 { // three days, hourly
		stamp := day0.Add(time.Duration(i) * time.Hour)
		rs = append(rs, reading(f.bed, f.clock.Now(), values(0.5, 0, 0, 0), plant("p", "m", stamp, values(float64(i)/100, 0, 0, 0))))
	}
	if rec, err := f.st.RecordReadings(rs); err != nil || rec.Plants != 72 || !rec.Bed {
		t.Fatalf("recorded %+v, %v", rec, err)
	}
	// The plant was dry (below 0.25) until 01:00 of the second day: one alert,
	// closed then.
	if as := mustAlerts(t, f.st, f.garden.ID, false); len(as) != 1 || !as[0].Closed.Equal(day0.Add(25*time.Hour)) {
		t.Fatalf("closed alerts before the drop: %s", alertsText(as))
	}
	cut := day0.Add(30 * time.Hour) // 06:00 of the second day
	n, err := f.st.DropHistoryBefore(cut)
	if err != nil || n != 2*30 {
		t.Fatalf("dropped %d, %v; want 60 (30 of the plant, 30 of the bed)", n, err)
	}
	// An alert closed before the cut goes with the points: records of alerts do not
	// pile up for ever.
	if as := mustAlerts(t, f.st, f.garden.ID, false); len(as) != 0 {
		t.Errorf("closed alerts left after the drop: %s", alertsText(as))
	}
	pts := history(t, f.st, f, "p")
	if len(pts) != 42 || !pts[0].At.Equal(cut) || *pts[0].SoilHumidity != 0.3 {
		t.Fatalf("%d left, first %v", len(pts), pointsText(pts[:1]))
	}
	if n, _ := f.st.DropHistoryBefore(cut); n != 0 {
		t.Errorf("dropped %d more", n)
	}
	// Recording goes on after a drop; the dropped measurements are not new again.
	if rec := mustRecord(t, f.st, rs[0]); rec.Plants != 0 {
		t.Errorf("an old measurement again: %+v", rec)
	}
	if n, _ := f.st.DropHistoryBefore(day0.Add(1000 * time.Hour)); n != 84 {
		t.Errorf("dropped %d of the 84 left", n)
	}
	if pts := history(t, f.st, f, ""); len(pts) != 0 {
		t.Errorf("left %s", pointsText(pts))
	}
	// An open alert stays, however old: it is what needs attention now; one closed
	// after the cut stays too.
	dryFrom := day0.Add(1001 * time.Hour)
	mustRecord(t, f.st, reading(f.bed, f.clock.Now(), values(0.5, 0, 0, 0),
		plant("q", "mq1", dryFrom, values(0.1, 0, 0, 0)), plant("r", "mr1", dryFrom, values(0.1, 0, 0, 0))))
	mustRecord(t, f.st, reading(f.bed, f.clock.Now(), values(0.5, 0, 0, 0),
		plant("q", "mq2", dryFrom.Add(time.Hour), values(0.1, 0, 0, 0)), plant("r", "mr2", dryFrom.Add(10*time.Hour), values(0.5, 0, 0, 0))))
	if _, err := f.st.DropHistoryBefore(dryFrom.Add(5 * time.Hour)); err != nil {
		t.Fatal(err)
	}
	if as := mustAlerts(t, f.st, f.garden.ID, true); len(as) != 1 || as[0].Plant != "q" {
		t.Errorf("open alerts after a drop: %s", alertsText(as))
	}
	if as := mustAlerts(t, f.st, f.garden.ID, false); len(as) != 1 || as[0].Plant != "r" {
		t.Errorf("closed alerts after a drop before they closed: %s", alertsText(as))
	}
}

func alertsText(as []store.Alert) string {
	var parts []string
	for _, a := range as {
		s := fmt.Sprintf("%s/%s %v", cmpOr(a.Plant, "bed"), a.Kind, a.Level)
		if a.Closed != nil {
			s += " closed"
		}
		if a.Task != nil {
			s += fmt.Sprintf(" task %d", *a.Task)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

func cmpOr(a, b string) string {
	if a == "" {
		return b
	}
	return a
}

func mustAlerts(tb testing.TB, st store.AlertStore, gardenID uint64, open bool) []store.Alert {
	tb.Helper()
	as, err := st.Alerts(gardenID, open)
	if err != nil {
		tb.Fatal(err)
	}
	return as
}

// testAlertsFollowMeasurements: an aspect reaching its threshold (or humidity below
// its minimum) raises an alert for the bed or plant, a later measurement inside
// closes it and the record stays; a missing value leaves it as it is; a plant gone
// from its bed has its alerts closed. Most severe first.
func testAlertsFollowMeasurements(t *testing.T, h Harness) {
	f := newFarm(t, h)
	at := func(i int) time.Time { return f.t0.Add(time.Duration(i) * time.Hour) }
	scan := func(i int, bed store.HistoryValues, plants ...store.PlantReading) store.Recorded {
		return mustRecord(t, f.st, reading(f.bed, f.clock.Now(), bed, plants...))
	}
	rec := scan(0, values(0.3, 2, 0, 0),
		plant("p1", "m1", at(0), values(0.2, 3, 0, 2)),  // dry, water 3, diseases 2
		plant("p2", "m2", at(0), values(0.5, 1, 4, 0)),  // nutrients 4
		plant("p3", "m3", at(0), values(0.26, 0, 0, 1))) // fine
	if rec.Raised != 4 {
		t.Fatalf("raised %d", rec.Raised)
	}
	open := mustAlerts(t, f.st, f.garden.ID, true)
	// Severity: p2 nutrients 2 steps, then the 1-step ones: diseases, water, soil
	// humidity (0.2 is 0.05 below 0.25: 2 steps).
	if got := alertsText(open); got != "p1/soil_humidity 0.2, p2/nutrients 4, p1/diseases 2, p1/water 3" {
		t.Fatalf("open: %s", got)
	}
	a := open[0]
	if a.Company == 0 || a.Garden != f.garden.ID || a.Bed != f.bed.ID || a.BedName != "Bed 6" || a.Species != "tomato" ||
		!a.Since.Equal(at(0)) || a.Closed != nil || a.Task != nil {
		t.Errorf("alert %+v", a)
	}
	// p1: water better, humidity unknown, diseases worse; p2 unchanged (same
	// measurement); the bed's water reaches 3.
	rec = scan(1, values(0.3, 3, 0, 0),
		plant("p1", "m1", at(1), store.HistoryValues{Health: []store.HealthLevel{{Type: "water", Level: 1}, {Type: "diseases", Level: 3}}}),
		plant("p2", "m2", at(0), values(0.1, 0, 0, 0)),
		plant("p3", "m3", at(0), values(0.26, 0, 0, 1)))
	if rec.Raised != 1 || rec.Closed != 1 {
		t.Errorf("second scan %+v", rec)
	}
	if got := alertsText(mustAlerts(t, f.st, f.garden.ID, true)); got != "p1/diseases 3, p1/soil_humidity 0.2, p2/nutrients 4, bed/water 3" {
		t.Errorf("open: %s", got)
	}
	closed := mustAlerts(t, f.st, f.garden.ID, false)
	if got := alertsText(closed); got != "p1/water 3 closed" || !closed[0].Closed.Equal(at(1)) || !closed[0].Since.Equal(at(0)) {
		t.Errorf("closed: %s %+v", got, closed)
	}
	// p2 is gone from the bed: its alert closes; p1 comes back inside everywhere.
	scan(2, values(0.3, 3, 0, 0), plant("p1", "m1", at(2), values(0.4, 0, 0, 0)), plant("p3", "m3", at(0), values(0.26, 0, 0, 1)))
	if got := alertsText(mustAlerts(t, f.st, f.garden.ID, true)); got != "bed/water 3" {
		t.Errorf("open: %s", got)
	}
	if n := len(mustAlerts(t, f.st, f.garden.ID, false)); n != 4 {
		t.Errorf("%d closed", n)
	}
	// p2 back, still short of nutrients: a new alert, the old one stays closed.
	scan(3, values(0.3, 3, 0, 0), plant("p1", "m1", at(2), values(0.4, 0, 0, 0)), plant("p2", "m2b", at(3), values(0.5, 0, 3, 0)),
		plant("p3", "m3", at(0), values(0.26, 0, 0, 1)))
	if got := alertsText(mustAlerts(t, f.st, f.garden.ID, true)); got != "bed/water 3, p2/nutrients 3" {
		t.Errorf("open: %s", got)
	}

	// Who sees what: OpenAlerts by visible gardens; Alert under its garden only.
	all, err := f.st.OpenAlerts(nil)
	if err != nil || len(all) != 2 {
		t.Fatalf("every open alert: %s, %v", alertsText(all), err)
	}
	if none, _ := f.st.OpenAlerts(map[uint64]bool{f.second.ID: true}); len(none) != 0 {
		t.Errorf("another garden's: %s", alertsText(none))
	}
	if _, err := f.st.Alert(f.second.ID, all[0].ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("alert under another garden: %v", err)
	}
	if got, err := f.st.Alert(f.garden.ID, all[0].ID); err != nil || got.ID != all[0].ID || got.BedName != "Bed 6" {
		t.Errorf("alert %+v, %v", got, err)
	}
	// Deleting the bed deletes its alerts.
	if _, err := f.st.DeleteBed(f.garden.ID, f.bed.ID); err != nil {
		t.Fatal(err)
	}
	if n := len(mustAlerts(t, f.st, f.garden.ID, false)) + len(mustAlerts(t, f.st, f.garden.ID, true)); n != 0 {
		t.Errorf("%d alerts outlive their bed", n)
	}
}

// testAlertTask: an alert records the task made from it; a second is refused while
// the first exists; a deleted task is forgotten.
func testAlertTask(t *testing.T, h Harness) {
	f := newFarm(t, h)
	mustRecord(t, f.st, reading(f.bed, f.clock.Now(), values(0.1, 0, 0, 0), plant("p1", "m1", f.t0, values(0.1, 0, 0, 0))))
	as := mustAlerts(t, f.st, f.garden.ID, true)
	if len(as) != 2 {
		t.Fatalf("alerts %s", alertsText(as))
	}
	task := func() store.Log {
		l, err := f.st.CreateLog(f.garden.ID, f.owner.ID, patch(store.LogTask, "Water bed 6"), nil)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	l := task()
	a, err := f.st.SetAlertTask(f.garden.ID, as[0].ID, l.ID)
	if err != nil || a.Task == nil || *a.Task != l.ID {
		t.Fatalf("set task: %+v, %v", a, err)
	}
	if _, err := f.st.SetAlertTask(f.garden.ID, as[0].ID, task().ID); !errors.Is(err, store.ErrConflict) {
		t.Errorf("a second task: %v", err)
	}
	if _, err := f.st.SetAlertTask(f.second.ID, as[1].ID, l.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("alert under another garden: %v", err)
	}
	if _, err := f.st.SetAlertTask(f.garden.ID, as[1].ID, 9999); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a log that does not exist: %v", err)
	}
	if _, err := f.st.DeleteLog(f.garden.ID, l.ID, nil); err != nil {
		t.Fatal(err)
	}
	if a, _ := f.st.Alert(f.garden.ID, as[0].ID); a.Task != nil {
		t.Errorf("deleted task still shown: %d", *a.Task)
	}
	l2 := task()
	if a, err := f.st.SetAlertTask(f.garden.ID, as[0].ID, l2.ID); err != nil || *a.Task != l2.ID {
		t.Errorf("a task after the first was deleted: %+v, %v", a, err)
	}
}

// testGuidance: a garden's guidance defaults, is replaced whole, normalised and
// validated field by field; a change of thresholds re-evaluates every alert at once
// against the newest measurements; it goes with its garden.
func testGuidance(t *testing.T, h Harness) {
	f := newFarm(t, h)
	g, err := f.st.Guidance(f.garden.ID)
	if err != nil || g.Thresholds != store.DefaultThresholds || g.Advice == nil || len(g.Advice) != 0 {
		t.Fatalf("default guidance %+v, %v", g, err)
	}
	if _, err := f.st.Guidance(9999); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("guidance of no garden: %v", err)
	}
	mustRecord(t, f.st, reading(f.bed, f.clock.Now(), values(0.3, 2, 0, 0),
		plant("p1", "m1", f.t0, values(0.22, 2, 0, 0)), plant("p2", "m2", f.t0, values(0.5, 3, 0, 0))))
	if got := alertsText(mustAlerts(t, f.st, f.garden.ID, true)); got != "p2/water 3, p1/soil_humidity 0.22" {
		t.Fatalf("open: %s", got)
	}
	f.clock.Advance(time.Hour)
	doc := store.Guidance{
		Thresholds: store.Thresholds{Water: 2, Nutrients: 3, Diseases: 2, SoilHumidityMin: 0.2},
		Advice: map[string]map[store.AlertKind]store.Advice{
			" Tomato ": {store.AlertWater: {Title: " Water deeply ", Steps: []string{" Soak the bed. ", "Mulch."}}},
			"*":        {store.AlertDiseases: {Title: "Look closely", Steps: []string{"Remove sick leaves."}}},
		},
	}
	saved, rec, err := f.st.SetGuidance(f.garden.ID, doc)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Raised != 2 || rec.Closed != 1 {
		t.Errorf("re-evaluated %+v", rec)
	}
	if a, ok := saved.AdviceFor("TOMATO", store.AlertWater); !ok || a.Title != "Water deeply" || a.Steps[0] != "Soak the bed." {
		t.Errorf("saved advice %+v", saved.Advice)
	}
	if a, ok := saved.AdviceFor("lettuce", store.AlertDiseases); !ok || a.Title != "Look closely" {
		t.Errorf("advice for any species %+v", a)
	}
	if _, ok := saved.AdviceFor("lettuce", store.AlertWater); ok {
		t.Error("advice where the garden gave none")
	}
	open := mustAlerts(t, f.st, f.garden.ID, true)
	if got := alertsText(open); got != "p2/water 3, bed/water 2, p1/water 2" {
		t.Errorf("open after the change: %s", got)
	}
	for _, a := range open {
		if a.Plant != "p2" && !a.Since.Equal(f.clock.Now()) {
			t.Errorf("raised by the change since %v, want now", a.Since)
		}
	}
	if got, _ := f.st.Guidance(f.garden.ID); got.Thresholds != doc.Thresholds || len(got.Advice) != 2 || got.Advice["tomato"] == nil {
		t.Errorf("read back %+v", got)
	}

	for _, tc := range []struct {
		field string
		edit  func(g *store.Guidance)
	}{
		{"thresholds.water", func(g *store.Guidance) { g.Thresholds.Water = 0 }},
		{"thresholds.diseases", func(g *store.Guidance) { g.Thresholds.Diseases = 1001 }},
		{"thresholds.soil_humidity_min", func(g *store.Guidance) { g.Thresholds.SoilHumidityMin = 1.5 }},
		{"advice.tomato.frost", func(g *store.Guidance) {
			g.Advice["tomato"] = map[store.AlertKind]store.Advice{"frost": {Title: "t", Steps: []string{"s"}}}
		}},
		{"advice.tomato.water.title", func(g *store.Guidance) {
			g.Advice["tomato"] = map[store.AlertKind]store.Advice{store.AlertWater: {Title: " ", Steps: []string{"s"}}}
		}},
		{"advice.tomato.water.steps", func(g *store.Guidance) {
			g.Advice["tomato"] = map[store.AlertKind]store.Advice{store.AlertWater: {Title: "t"}}
		}},
		{"advice.tomato.water.steps[1]", func(g *store.Guidance) {
			g.Advice["tomato"] = map[store.AlertKind]store.Advice{store.AlertWater: {Title: "t", Steps: []string{"a", strings.Repeat("x", 501)}}}
		}},
		{"advice", func(g *store.Guidance) { g.Advice["a.b"] = g.Advice["*"] }},
	} {
		bad := store.Guidance{Thresholds: store.DefaultThresholds, Advice: map[string]map[store.AlertKind]store.Advice{
			"*": {store.AlertWater: {Title: "t", Steps: []string{"s"}}},
		}}
		tc.edit(&bad)
		_, _, err := f.st.SetGuidance(f.garden.ID, bad)
		var v *store.ValidationError
		if !errors.As(err, &v) || v.Fields[tc.field] == "" {
			t.Errorf("%s: %v", tc.field, err)
		}
	}
	if got, _ := f.st.Guidance(f.garden.ID); got.Thresholds != doc.Thresholds {
		t.Errorf("a refused document changed the guidance: %+v", got)
	}
	if _, err := f.st.DeleteGarden(f.garden.Company, f.garden.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.st.SetGuidance(f.garden.ID, doc); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("guidance of a deleted garden: %v", err)
	}
}

// testLeases: one node holds a lease at a time; it renews it; another takes it when
// its time ran out or it was released; nodes asking at once get it once.
func testLeases(t *testing.T, h Harness) {
	nodes, clock := openNodes(t, h, 3)
	a, b := nodes[0], nodes[1]
	acquire := func(st store.LeaseStore, node string) bool {
		t.Helper()
		ok, err := st.AcquireLease("reader", node, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !acquire(a, "n1") || acquire(b, "n2") {
		t.Fatal("n1 should hold the lease and n2 not")
	}
	clock.Advance(50 * time.Second)
	if !acquire(a, "n1") { // renewed until 50 s + 1 min
		t.Fatal("renewal refused")
	}
	clock.Advance(50 * time.Second)
	if acquire(b, "n2") {
		t.Fatal("n2 took a renewed lease")
	}
	if ok, _ := b.AcquireLease("other", "n2", time.Minute); !ok {
		t.Error("another lease is free")
	}
	clock.Advance(11 * time.Second)
	if !acquire(b, "n2") || acquire(a, "n1") {
		t.Fatal("n2 should take over a lease that ran out")
	}
	if err := a.ReleaseLease("reader", "n1"); err != nil { // not its own: nothing
		t.Fatal(err)
	}
	if acquire(a, "n1") {
		t.Fatal("n1 released n2's lease")
	}
	if err := b.ReleaseLease("reader", "n2"); err != nil {
		t.Fatal(err)
	}
	if !acquire(a, "n1") {
		t.Fatal("a released lease is free")
	}
	if _, err := a.AcquireLease("", "n1", time.Minute); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("nameless lease: %v", err)
	}
	if err := a.ReleaseLease("reader", "n1"); err != nil {
		t.Fatal(err)
	}
	for round := range 5 {
		var held atomic.Int64
		var fns []func()
		for i, st := range slices.Repeat(nodes, 2) {
			fns = append(fns, func() {
				ok, err := st.AcquireLease(fmt.Sprintf("race-%d", round), fmt.Sprintf("n%d", i), time.Minute)
				if err != nil {
					t.Error(err)
				}
				if ok {
					held.Add(1)
				}
			})
		}
		together(fns...)
		if held.Load() != 1 {
			t.Fatalf("round %d: %d nodes hold the lease", round, held.Load())
		}
	}
}

// fillHistory gives the archive tests history, alerts (open and closed, one with a
// task, one whose task was deleted) and a garden's guidance.
func fillHistory(tb testing.TB, st store.Backend, clock *Clock, g store.Garden, author store.User) {
	tb.Helper()
	must := func(err error) {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
	}
	bed := mustBedOf(tb, st, g.ID)
	t0 := clock.Now().Add(-30 * time.Hour).Truncate(time.Second)
	exact := 0.123456789
	for i, v := range []store.HistoryValues{
		values(0.2, 3, 0, 2),
		{SoilHumidity: &exact, Yield: ptr(1.5), HarvestWeeks: ptr(int64(2)), Health: []store.HealthLevel{{Type: "frost", Level: 1}}},
		values(0.5, 0, 0, 2),
	} {
		at := t0.Add(time.Duration(i) * 13 * time.Hour)
		sum := values(0.3, 1, 0, 0)
		sum.Plants = ptr(int64(2))
		_, err := st.RecordReading(store.BedReading{Bed: bed.ID, Name: "north", Read: at, At: at, Species: "tomato", Summary: sum,
			Plants: []store.PlantReading{plant("m-1", "meas-1", at, v), plant("m-2", "meas-2", time.Time{}, values(0.1, -1, -1, -1))}})
		must(err)
	}
	_, _, err := st.SetGuidance(g.ID, store.Guidance{Thresholds: store.Thresholds{Water: 3, Nutrients: 4, Diseases: 2, SoilHumidityMin: 0.2},
		Advice: map[string]map[store.AlertKind]store.Advice{"tomato": {store.AlertWater: {Title: "Ours", Steps: []string{"One.", "Two."}}}}})
	must(err)
	open, err := st.Alerts(g.ID, true)
	must(err)
	if len(open) < 2 {
		tb.Fatalf("fill: %d open alerts", len(open))
	}
	task := store.LogTask
	for i, a := range open[:2] {
		l, err := st.CreateLog(g.ID, author.ID, store.LogPatch{Type: &task, Title: ptr("Water " + a.Plant)}, nil)
		must(err)
		_, err = st.SetAlertTask(g.ID, a.ID, l.ID)
		must(err)
		if i == 1 {
			_, err = st.DeleteLog(g.ID, l.ID, nil)
			must(err)
		}
	}
}

// testHistoryArchive: history, alerts and guidance go through an archive: the same
// points, the same alerts with their tasks, the same guidance; and the import keeps
// recording where the archive left off. A chunk whose series the archive does not
// hold before it, or an alert of an unknown kind, is refused.
func testHistoryArchive(t *testing.T, h Harness) {
	src, clock := open(t, h)
	Fill(t, src, clock)
	archive := export(t, src)
	for _, kind := range []string{store.KindGuidance, store.KindHistorySeries, store.KindHistoryChunk, store.KindAlert} {
		if !bytes.Contains(archive, []byte(`{"kind":"`+kind+`"`)) {
			t.Errorf("the archive has no %s", kind)
		}
	}
	dst, _ := openNodes(t, h, 1)
	if err := dst[0].Import(context.Background(), bytes.NewReader(archive), store.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	gardens, _ := src.Gardens()
	g := gardens[0]
	bed := mustBedOf(t, src, g.ID)
	from, until := time.Unix(0, 0), clock.Now().Add(time.Hour)
	for _, plant := range []string{"", "m-1", "m-2"} {
		var a, b []store.HistoryPoint
		if plant == "" {
			a, _ = src.BedHistory(g.ID, bed.ID, from, until, 0)
			b, _ = dst[0].BedHistory(g.ID, bed.ID, from, until, 0)
		} else {
			a, _ = src.PlantHistory(g.ID, bed.ID, plant, from, until, 0)
			b, _ = dst[0].PlantHistory(g.ID, bed.ID, plant, from, until, 0)
		}
		if len(a) == 0 || pointsText(a) != pointsText(b) {
			t.Errorf("history of %q:\n%s\nbecame\n%s", plant, pointsText(a), pointsText(b))
		}
	}
	for _, open := range []bool{true, false} {
		a, b := mustAlerts(t, src, g.ID, open), mustAlerts(t, dst[0], g.ID, open)
		if len(a) == 0 || alertsText(a) != alertsText(b) {
			t.Errorf("alerts (open %v): %s became %s", open, alertsText(a), alertsText(b))
		}
	}
	ga, _ := src.Guidance(g.ID)
	gb, _ := dst[0].Guidance(g.ID)
	if fmt.Sprint(ga) != fmt.Sprint(gb) {
		t.Errorf("guidance %+v became %+v", ga, gb)
	}
	// An older measurement is not new after the import (m-2, gone from the read,
	// has its alert closed); a new one is, and closes m-1's diseases alert.
	at := clock.Now()
	old := reading(bed, at, values(0.3, 1, 0, 0), plant("m-1", "meas-1", at.Add(-4*time.Hour), values(0.5, 0, 0, 0)))
	if rec := mustRecord(t, dst[0], old); rec.Plants != 0 || rec.Closed != 1 {
		t.Errorf("an old measurement after the import: %+v", rec)
	}
	r := reading(bed, at, values(0.3, 1, 0, 0), plant("m-1", "meas-1", at, values(0.5, 0, 0, 0)))
	if rec := mustRecord(t, dst[0], r); rec.Plants != 1 || rec.Closed != 1 {
		t.Errorf("recording after the import: %+v", rec)
	}
	// Refusals.
	lines := strings.Split(strings.TrimSpace(string(archive)), "\n")
	var withoutSeries, badKind []string
	for _, l := range lines {
		if !strings.Contains(l, `"kind":"history_series"`) {
			withoutSeries = append(withoutSeries, l)
		}
		badKind = append(badKind, strings.Replace(l, `"kind":"soil_humidity"`, `"kind":"frost"`, 1))
	}
	for name, a := range map[string][]string{"chunk without its series": withoutSeries, "unknown alert kind": badKind} {
		empty, _ := openNodes(t, h, 1)
		err := empty[0].Import(context.Background(), strings.NewReader(strings.Join(a, "\n")+"\n"), store.ImportOptions{})
		if !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// testArchiveFormat3: an archive written before history was part of it (format 3,
// the logbook's) restores: its logs load, the garden has the default guidance, no
// history and no alerts, and the first reading after it records and raises alerts.
func testArchiveFormat3(t *testing.T, h Harness) {
	src, clock := open(t, h)
	ann := mustUser(t, src, "ann")
	g := mustGarden(t, src, mustCompany(t, src, ann, "c"), "g")
	bed, err := src.CreateBed(g.ID, uuidA, "north")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.KeepPlantIDs(uuidA, []store.PlantID{{Name: "plant 1", ID: "m-1"}}); err != nil {
		t.Fatal(err)
	}
	activity := store.LogActivity
	l, err := src.CreateLog(g.ID, ann.ID, store.LogPatch{Type: &activity, Title: ptr("Watered"), Bed: &bed.ID, Plant: ptr("m-1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	archive := string(export(t, src))
	for _, kind := range []string{store.KindGuidance, store.KindHistorySeries, store.KindHistoryChunk, store.KindAlert} {
		if strings.Contains(archive, `{"kind":"`+kind+`"`) {
			t.Fatalf("a store without history exports %s records", kind)
		}
	}
	header := fmt.Sprintf(`"format":%d`, store.ArchiveFormat)
	if !strings.Contains(archive, header) {
		t.Fatalf("no %s in %.200s", header, archive)
	}
	archive = strings.Replace(archive, header, `"format":3`, 1)

	dst, _ := openNodes(t, h, 1)
	if err := dst[0].Import(context.Background(), strings.NewReader(archive), store.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := dst[0].Log(g.ID, l.ID); err != nil || got.Title != "Watered" {
		t.Errorf("the log after a format 3 restore: %+v, %v", got, err)
	}
	if gd, err := dst[0].Guidance(g.ID); err != nil || fmt.Sprint(gd) != fmt.Sprint(store.DefaultGuidance()) {
		t.Errorf("guidance after a format 3 restore: %+v, %v", gd, err)
	}
	if pts, err := dst[0].BedHistory(g.ID, bed.ID, time.Unix(0, 0), clock.Now().Add(time.Hour), 0); err != nil || len(pts) != 0 {
		t.Errorf("history after a format 3 restore: %v, %v", pts, err)
	}
	if as := mustAlerts(t, dst[0], g.ID, true); len(as) != 0 {
		t.Errorf("alerts after a format 3 restore: %s", alertsText(as))
	}
	at := clock.Now()
	rec := mustRecord(t, dst[0], reading(bed, at, values(0.3, 1, 0, 0), plant("m-1", "meas-1", at, values(0.5, 3, 0, 0))))
	if rec.Plants != 1 || !rec.Bed || rec.Raised != 1 {
		t.Errorf("the first reading after a format 3 restore: %+v", rec)
	}
}

// testHistoryBatchAsOneByOne: readings recorded in one transaction keep the same
// points as the same readings recorded one at a time: across days, into a day kept
// before, a new measurement at a kept instant replacing its point, an older one
// refused, a plant missing from one read.
func testHistoryBatchAsOneByOne(t *testing.T, h Harness) {
	f := newFarm(t, h)
	day0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	at := func(hours float64) time.Time { return day0.Add(time.Duration(hours * float64(time.Hour))) }
	readings := func(bed store.Bed) (before store.BedReading, batch []store.BedReading) {
		read := f.clock.Now()
		before = reading(bed, read, values(0.5, 1, 0, 0), plant("p", "m1", at(22), values(0.41, 0, 0, 0)), plant("q", "n1", at(22), values(0.31, 0, 0, 0)))
		batch = []store.BedReading{
			reading(bed, read, values(0.5, 1, 0, 0), plant("p", "m1", at(23), values(0.42, 3, 0, 0)), plant("q", "n1", at(23), values(0.32, 0, 0, 0))),
			reading(bed, read, values(0.6, 1, 0, 0), plant("p", "m1", at(24), values(0.43, 1, 0, 0)), plant("q", "n1", at(24), values(0.33, 0, 2, 0))),
			reading(bed, read, values(0.6, 2, 0, 0), plant("p", "m2", at(24), values(0.44, 0, 0, 0)), plant("q", "n1", at(24), values(0.33, 0, 2, 0))),
			reading(bed, read, values(0.7, 1, 0, 0), plant("p", "m2", at(29), values(0.45, 0, 0, 0))),
			reading(bed, read, values(0.7, 1, 0, 0), plant("p", "m2", at(20), values(0.99, 0, 0, 0)), plant("q", "n1", at(49.5), values(0.34, 0, 0, 0))),
		}
		return before, batch
	}
	one, err := f.st.CreateBed(f.garden.ID, "3fa85f64-5717-4562-b3fc-000000000007", "One by one")
	if err != nil {
		t.Fatal(err)
	}
	before, batch := readings(f.bed)
	mustRecord(t, f.st, before)
	rec, err := f.st.RecordReadings(batch)
	if err != nil {
		t.Fatal(err)
	}
	before, single := readings(one)
	mustRecord(t, f.st, before)
	var sum store.Recorded
	for _, r := range single {
		got := mustRecord(t, f.st, r)
		sum.Plants, sum.Raised, sum.Closed = sum.Plants+got.Plants, sum.Raised+got.Raised, sum.Closed+got.Closed
	}
	if rec.Plants != sum.Plants || rec.Raised != sum.Raised || rec.Closed != sum.Closed {
		t.Errorf("batch recorded %+v, one by one %+v", rec, sum)
	}
	list := func(bed store.Bed, plant string) string {
		t.Helper()
		var pts []store.HistoryPoint
		var err error
		if plant == "" {
			pts, err = f.st.BedHistory(f.garden.ID, bed.ID, day0, at(72), 0)
		} else {
			pts, err = f.st.PlantHistory(f.garden.ID, bed.ID, plant, day0, at(72), 0)
		}
		if err != nil {
			t.Fatal(err)
		}
		return pointsText(pts)
	}
	for _, plant := range []string{"p", "q", ""} {
		if got, want := list(f.bed, plant), list(one, plant); got != want {
			t.Errorf("plant %q: batch kept\n%s\none by one\n%s", plant, got, want)
		}
	}
	if got, want := list(f.bed, "p"), "11-01T22:00:00.000000 h=0.41 water=0 nutrients=0 diseases=0; 11-01T23:00:00.000000 h=0.42 water=3 nutrients=0 diseases=0; "+
		"11-02T00:00:00.000000 h=0.44 water=0 nutrients=0 diseases=0; 11-02T05:00:00.000000 h=0.45 water=0 nutrients=0 diseases=0; "; got != want {
		t.Errorf("plant p kept\n%s\nwant\n%s", got, want)
	}
}

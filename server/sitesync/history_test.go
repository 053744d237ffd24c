package sitesync

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/server/sitesync/synctest"
	"github.com/gardend/gardend/store"
)

// historyReadings are hourly readings of a bed over days from start: plants whose
// humidity drifts, the first of them dry (an alert) from the second day on.
func historyReadings(bed store.Bed, plants int, start time.Time, hours int) []store.BedReading {
	out := make([]store.BedReading, 0, hours)
	for h := range hours {
		at := start.Add(time.Duration(h) * time.Hour)
		r := store.BedReading{Bed: bed.ID, Name: bed.Name, Read: at, At: at, Species: "tomato"}
		for p := range plants {
			hum := 0.3 + float64((h*7+p*13)%40)/100
			if p == 0 && h >= 24 {
				hum = 0.1
			}
			water := int64((h + p) % 3)
			r.Plants = append(r.Plants, store.PlantReading{ID: fmt.Sprintf("%s-p%02d", bed.UUID[:8], p),
				Measurement: fmt.Sprintf("m-%d-%d", p, h), Stamp: at, Species: "tomato",
				Values: store.HistoryValues{SoilHumidity: &hum, Health: []store.HealthLevel{{Type: "water", Level: water}}}})
		}
		n := int64(plants)
		mean := 0.45
		r.Summary = store.HistoryValues{SoilHumidity: &mean, Plants: &n}
		out = append(out, r)
	}
	return out
}

// TestHistoryReplicates: a box's history (bed and plant points over several days),
// its alerts (one with a task) and its guidance reach the office as the box has
// them; a week of hourly readings made while the link is down arrives once it
// returns. It logs the bytes up per bed-day and the office's apply rate.
func TestHistoryReplicates(t *testing.T) {
	t.Parallel()
	hub, ost := officeWithHub(t)
	proxy := synctest.NewProxy(t, strings.TrimPrefix(hub.LeafURL(), "nats-leaf://"))
	o := startOffice(t, hub, ost, "office-1")
	b := newBoxStore(t)
	owner := must[store.User](t)(b.st.CreateUser(store.NewUser{Username: "owner", FirstName: "O", LastName: "W", PasswordHash: "h"}))
	c := must[store.Company](t)(b.st.CreateCompany(owner.ID, "Farm"))
	g := must[store.Garden](t)(b.st.CreateGarden(c.ID, "Field"))
	const beds, plants = 6, 33
	var bs []store.Bed
	for i := range beds {
		bs = append(bs, must[store.Bed](t)(b.st.CreateBed(g.ID, fmt.Sprintf("%08d-5717-4562-b3fc-2c963f66afa6", i), fmt.Sprintf("bed %d", i))))
	}
	start := time.Now().UTC().Truncate(24 * time.Hour).Add(-14 * 24 * time.Hour)
	for _, bed := range bs {
		if _, err := b.st.RecordReadings(historyReadings(bed, plants, start, 3*24)); err != nil {
			t.Fatal(err)
		}
	}
	gd := store.DefaultGuidance()
	gd.Thresholds.SoilHumidityMin = 0.2
	gd.Advice["tomato"] = map[store.AlertKind]store.Advice{store.AlertSoilHumidity: {Title: "Water the row", Steps: []string{"Drip for an hour."}}}
	if _, _, err := b.st.SetGuidance(g.ID, gd); err != nil {
		t.Fatal(err)
	}
	open := must[[]store.Alert](t)(b.st.Alerts(g.ID, true))
	if len(open) == 0 {
		t.Fatal("no alert raised at the box")
	}
	task := must[store.Log](t)(b.st.CreateLog(g.ID, owner.ID, store.LogPatch{Type: ptr(store.LogTask), Title: ptr("water row 1")}, nil))
	must[store.Alert](t)(b.st.SetAlertTask(g.ID, open[0].ID, task.ID))

	b.join(t, ost, "farm-a", "nats-leaf://"+proxy.Addr())
	took := converge(t, 60*time.Second, b, ost)
	t.Logf("snapshot of %d bed-days: converged in %v", beds*3, took.Round(100*time.Millisecond))
	// What the office answers, read as the API reads it.
	from, until := start, start.Add(30*24*time.Hour)
	bed := bs[0]
	wantPts := must[[]store.HistoryPoint](t)(b.st.PlantHistory(g.ID, bed.ID, bed.UUID[:8]+"-p00", from, until, 0))
	gotPts := must[[]store.HistoryPoint](t)(ost.PlantHistory(b.gid(g.ID), b.gid(bed.ID), bed.UUID[:8]+"-p00", from, until, 0))
	if len(wantPts) != 72 || pointsString(gotPts) != pointsString(wantPts) {
		t.Errorf("plant history at the office: %d points, at the box %d (72 expected)", len(gotPts), len(wantPts))
	}
	oa := must[store.Alert](t)(ost.Alert(b.gid(g.ID), b.gid(open[0].ID)))
	if oa.Task == nil || *oa.Task != b.gid(task.ID) {
		t.Errorf("the alert's task at the office: %+v", oa.Task)
	}

	// A week of hourly readings while the link is down, each hour's published by
	// the box before the next (as a reader's would be), and new guidance.
	proxy.Cut()
	week := make([][]store.BedReading, len(bs))
	for i, bed := range bs {
		week[i] = historyReadings(bed, plants, start.Add(3*24*time.Hour), 7*24)
	}
	for h := range 7 * 24 {
		var hour []store.BedReading
		for i := range bs {
			hour = append(hour, week[i][h])
		}
		if _, err := b.st.RecordReadings(hour); err != nil {
			t.Fatal(err)
		}
		published(t, b)
	}
	gd.Thresholds.SoilHumidityMin = 0.15
	if _, _, err := b.st.SetGuidance(g.ID, gd); err != nil {
		t.Fatal(err)
	}
	stats, _ := b.st.ChangeStats()
	applied0, _ := counters(o.office, b.site.Number)
	up0 := proxy.Up.Load()
	proxy.Restore()
	restored := time.Now()
	waitFor(t, 120*time.Second, "the week's changes applied", func() bool {
		st, err := b.box.Status(context.Background())
		return err == nil && st.BacklogRecords == 0
	})
	applyTook := time.Since(restored)
	took = converge(t, 120*time.Second, b, ost)
	applied, _ := counters(o.office, b.site.Number)
	up := proxy.Up.Load() - up0
	bedDays := beds * 7
	t.Logf("a week offline, %d beds of %d plants read hourly: %d changes sent as %d messages, applied in %v (%.0f changes/s), converged in %v; %d KiB up, %.1f KiB per bed-day, %.1f bytes per point",
		beds, plants, stats.Records, applied-applied0, applyTook.Round(100*time.Millisecond), float64(stats.Records)/applyTook.Seconds(), took.Round(100*time.Millisecond),
		up>>10, float64(up)/1024/float64(bedDays), float64(up)/float64(bedDays*24*(plants+1)))
}

// published waits until the box has published every change of its feed.
func published(t *testing.T, b *testBox) {
	t.Helper()
	st, err := b.st.ChangeStats()
	if err != nil {
		t.Fatal(err)
	}
	b.box.Wake()
	waitFor(t, 10*time.Second, "the box to publish its feed", func() bool { return b.box.PublishedSeq() >= st.LastSeq })
}

// TestHistoryBurst: readings of many hours of a bed recorded at once (the demo's
// history, a reader catching up) go as whole days, one message per bed-day, not
// one per hour.
func TestHistoryBurst(t *testing.T) {
	t.Parallel()
	hub, ost := officeWithHub(t)
	startOffice(t, hub, ost, "office-1")
	b := newBoxStore(t)
	owner := must[store.User](t)(b.st.CreateUser(store.NewUser{Username: "owner", FirstName: "O", LastName: "W", PasswordHash: "h"}))
	c := must[store.Company](t)(b.st.CreateCompany(owner.ID, "Farm"))
	g := must[store.Garden](t)(b.st.CreateGarden(c.ID, "Field"))
	bed := must[store.Bed](t)(b.st.CreateBed(g.ID, "00000001-5717-4562-b3fc-2c963f66afa6", "bed"))
	proxy := synctest.NewProxy(t, strings.TrimPrefix(hub.LeafURL(), "nats-leaf://"))
	b.join(t, ost, "farm-a", "nats-leaf://"+proxy.Addr())
	converge(t, 30*time.Second, b, ost)
	published(t, b)
	proxy.Cut() // the feed keeps what the burst recorded until the office has it
	before := b.box.Published()
	start := time.Now().UTC().Truncate(24 * time.Hour).Add(-5 * 24 * time.Hour)
	if _, err := b.st.RecordReadings(historyReadings(bed, 4, start, 2*24)); err != nil {
		t.Fatal(err)
	}
	published(t, b)
	// Two days of history and the alerts raised (one plant dry from the second
	// day): the two days go as two messages.
	changes := must[[]store.Change](t)(b.st.ChangesAfter(0, 1000))
	var hours, others int
	for _, ch := range changes {
		if ch.Kind == store.KindHistory {
			hours++
		} else {
			others++
		}
	}
	if sent := b.box.Published() - before; hours != 48 || sent != uint64(2+others) {
		t.Errorf("%d hours of history and %d other changes went as %d messages, want %d", hours, others, sent, 2+others)
	}
	proxy.Restore()
	converge(t, 30*time.Second, b, ost)
}

func pointsString(pts []store.HistoryPoint) string {
	var b strings.Builder
	for _, p := range pts {
		b.WriteString(p.At.Format(time.RFC3339Nano))
		b.Write(store.AppendValues(nil, p.HistoryValues))
	}
	return b.String()
}

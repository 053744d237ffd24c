package sitesync

import (
	"fmt"
	"slices"
	"time"

	"github.com/gardend/gardend/store"
)

// diffAlerts lists how a garden's guidance and alerts at the office differ from the
// box's (ids mapped by g and atOffice).
func diffAlerts(box, office store.Backend, bg, og store.Garden, g, atOffice func(uint64) uint64) []string {
	var out []string
	bgd, err1 := box.Guidance(bg.ID)
	ogd, err2 := office.Guidance(og.ID)
	if err1 != nil || err2 != nil || fmt.Sprint(bgd) != fmt.Sprint(ogd) {
		out = append(out, fmt.Sprintf("garden %d: guidance %+v at the office, %+v at the box (%v, %v)", bg.ID, ogd, bgd, err1, err2))
	}
	for _, open := range []bool{true, false} {
		ba, err1 := box.Alerts(bg.ID, open)
		oa, err2 := office.Alerts(og.ID, open)
		if err1 != nil || err2 != nil {
			out = append(out, fmt.Sprintf("garden %d: alerts: %v, %v", bg.ID, err1, err2))
			continue
		}
		want := make([]string, len(ba))
		for i, a := range ba {
			a.ID, a.Company, a.Garden, a.Bed = g(a.ID), g(a.Company), g(a.Garden), g(a.Bed)
			if a.Task != nil {
				task := atOffice(*a.Task)
				a.Task = &task
			}
			want[i] = alertText(a)
		}
		got := make([]string, len(oa))
		for i, a := range oa {
			got[i] = alertText(a)
		}
		if !slices.Equal(want, got) {
			out = append(out, fmt.Sprintf("garden %d: alerts (open %v)\n at the office %v\n at the box    %v", bg.ID, open, got, want))
		}
	}
	return out
}

func alertText(a store.Alert) string {
	task, closed := "-", "-"
	if a.Task != nil {
		task = fmt.Sprint(*a.Task)
	}
	if a.Closed != nil {
		closed = a.Closed.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("%d c%d g%d b%d %q %q %s %v sev%v %q %s %s task %s", a.ID, a.Company, a.Garden, a.Bed, a.BedName, a.Plant, a.Kind,
		a.Level, a.Severity, a.Species, a.Since.UTC().Format(time.RFC3339Nano), closed, task)
}

// diffHistory lists how the history of the box's beds at the office differs from
// the box's: every series, day by day, point for point.
func diffHistory(box, office store.Backend, g func(uint64) uint64) []string {
	var out []string
	beds, err := box.Beds()
	if err != nil {
		return []string{err.Error()}
	}
	for _, b := range beds {
		pts, err := box.BedHistory(b.Garden, b.ID, time.Unix(0, 0), time.Now().Add(24*time.Hour), 0)
		if err != nil {
			out = append(out, fmt.Sprintf("bed %d: history at the box: %v", b.ID, err))
			continue
		}
		if len(pts) == 0 {
			continue
		}
		// A plant's point may be a day older than its bed's (an old stamp).
		first, last := store.HistoryDay(pts[0].At)-1, store.HistoryDay(pts[len(pts)-1].At)
		for day := first; day <= last; day++ {
			bs, err1 := box.HistorySpan(b.ID, day, store.WholeDay)
			os, err2 := office.HistorySpan(g(b.ID), day, store.WholeDay)
			if err1 != nil || err2 != nil {
				out = append(out, fmt.Sprintf("bed %d day %d: %v, %v", b.ID, day, err1, err2))
				continue
			}
			if spanText(bs) != spanText(os) {
				out = append(out, fmt.Sprintf("bed %d day %d:\n at the office %s\n at the box    %s", b.ID, day, spanText(os), spanText(bs)))
			}
		}
	}
	return out
}

func spanText(sp store.HistorySpan) string {
	s := ""
	for _, sr := range sp.Series {
		pts, err := store.DecodeChunk(sp.Day, sr.Points)
		s += fmt.Sprintf("[%q %q %q %d points %v: %x] ", sr.Plant, sr.Species, sr.Name, len(pts), err, sr.Points)
	}
	return s
}

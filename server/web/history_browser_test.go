package web_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gardend/gardend/server"
)

type alertJSON struct {
	ID      uint64
	Company uint64
	Garden  uint64
	Bed     uint64
	Plant   string
	Kind    string
	Task    *uint64
	Advice  struct{ Title string }
}

type pointJSON struct {
	At           time.Time
	SoilHumidity *float64 `json:"soil_humidity"`
	Health       []struct {
		Type     string
		Loglevel int64
	}
}

// count counts the points that have a value: soil humidity, or a health type.
func count(pts []pointJSON, value string) int {
	n := 0
	for _, p := range pts {
		if value == "soil_humidity" && p.SoilHumidity != nil {
			n++
		}
		for _, h := range p.Health {
			if h.Type == value {
				n++
			}
		}
	}
	return n
}

// TestWebAppAttentionAndHistory: the demo's seeded history and alerts in the
// browser. The home page and the garden page list what needs attention, most
// severe first, as the API does; plants with an open alert stand out on the map;
// each bed's row has its 30-day trend and the history chart draws as many points as
// the API has (value by value, bed and plant), with the logbook's waterings marked;
// an admin makes a task of an alert, which the alert then names. No console error,
// no other host, at a desktop's and a phone's size.
func TestWebAppAttentionAndHistory(t *testing.T) {
	b := newBrowser(t)
	d := startDemo(t, 0)
	garden := d.srv.DemoGardenPath()
	// The robot's scan of now, read once: what the pages show stays put.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := d.srv.Reader().ReadAll(ctx); err != nil {
		t.Fatal(err)
	}
	if err := d.srv.WaitCloudsIdle(ctx); err != nil {
		t.Fatalf("the download queue did not drain: %v", err)
	}
	var all struct{ Alerts []alertJSON }
	d.api(t, "GET", "/alerts", nil, 200, &all)
	if len(all.Alerts) == 0 {
		t.Fatal("the demo has no open alert")
	}
	history := func(path, from, to string) []pointJSON {
		var h struct{ Points []pointJSON }
		d.api(t, "GET", path+"?"+url.Values{"from": {from}, "to": {to}}.Encode(), nil, 200, &h)
		return h.Points
	}

	for _, size := range []struct {
		name string
		w, h int64
	}{{"desktop", 1366, 768}, {"phone", 390, 844}} {
		t.Run(size.name, func(t *testing.T) {
			p := b.page(t, d.base, size.w, size.h)
			p.login(server.DemoUsername, server.DemoPassword)
			p.waitFor("the home page's alerts", `document.querySelector('.attention[data-state=loaded]')`)
			var home struct {
				N     int
				First string
			}
			p.eval(`({N: +document.querySelector('.attention').dataset.count, First: document.querySelector('li.alert .alert-title').textContent})`, &home)
			if home.N != len(all.Alerts) || home.First != all.Alerts[0].Advice.Title {
				p.errorf("home page: %+v; the API has %d alerts, the first %q", home, len(all.Alerts), all.Alerts[0].Advice.Title)
			}
			p.checkClean()

			p.open("#/c/1/g/1")
			p.waitFor("the garden drawn", `document.querySelector('main').dataset.settled === 'true' && document.querySelector('.attention[data-state=loaded]')`)
			var gardenAlerts struct{ Alerts []alertJSON }
			d.api(t, "GET", garden+"/alerts", nil, 200, &gardenAlerts)
			var listed int
			p.eval(`+document.querySelector('.attention').dataset.count`, &listed)
			if listed != len(gardenAlerts.Alerts) {
				p.errorf("the garden page lists %d alerts, the API %d", listed, len(gardenAlerts.Alerts))
			}
			// Every plant marker stands out exactly when its plant has an open alert.
			want := map[string]bool{}
			for _, a := range gardenAlerts.Alerts {
				if a.Plant != "" {
					want[fmt.Sprintf("%d/%s", a.Bed, a.Plant)] = true
				}
			}
			var marked []struct {
				Key      string
				Alerting bool
			}
			p.eval(`[...document.querySelectorAll('.map circle.plant')].map((c) => ({Key: c.dataset.key, Alerting: c.classList.contains('alerting')}))`, &marked)
			standing := 0
			for _, m := range marked {
				if m.Alerting != want[m.Key] {
					p.errorf("plant %s: alerting %v, open alert %v", m.Key, m.Alerting, want[m.Key])
				}
				if m.Alerting {
					standing++
				}
			}
			if len(marked) == 0 || standing == 0 {
				p.errorf("%d markers, %d standing out", len(marked), standing)
			}

			// The trend of the first bed (loaded as its row comes into view): as many
			// humidity points as the API has.
			p.eval(`document.querySelector('.trends-box').scrollIntoView(); true`, nil)
			p.waitFor("the first bed's trend", `document.querySelector('.panel-beds .trend[data-points]')`)
			var trend struct{ Bed, From, To, Points string }
			p.eval(`(() => { const e = document.querySelector('.panel-beds .trend[data-points]'); return {Bed: e.dataset.bed, From: e.dataset.from, To: e.dataset.to, Points: e.dataset.points}; })()`, &trend)
			pts := history(garden+"/beds/"+trend.Bed+"/history", trend.From, trend.To)
			if fmt.Sprint(count(pts, "soil_humidity")) != trend.Points || len(pts) < 200 {
				p.errorf("trend of bed %s: %s points drawn, the API has %d of %d with humidity", trend.Bed, trend.Points, count(pts, "soil_humidity"), len(pts))
			}

			// The chart of a bed, value by value, then of a plant.
			bed := trend.Bed
			p.do("select the bed", chromedp.Click(chromedp.CSS(`.panel-beds tr[data-key="`+bed+`"] td`)))
			p.waitFor("the chart", `document.querySelector('.panel-history .chart-box[data-state=drawn]')`)
			chartOf := func(value string) (points, markers int, from, to string) {
				p.t.Helper()
				var c struct {
					Points, Markers string
					From, To        string
				}
				p.waitFor("the "+value+" chart", `(() => { const b = document.querySelector('.panel-history .chart-box'); return b.dataset.state === 'drawn' && b.dataset.value === `+jsString(value)+`; })()`)
				p.eval(`(() => { const b = document.querySelector('.panel-history .chart-box'); const s = b.querySelector('svg.chart');
					return {Points: s.dataset.points, Markers: s.dataset.markers, From: b.dataset.from, To: b.dataset.to}; })()`, &c)
				if _, err := fmt.Sscan(c.Points, &points); err != nil {
					p.fatalf("points %q: %v", c.Points, err)
				}
				if _, err := fmt.Sscan(c.Markers, &markers); err != nil {
					p.fatalf("markers %q: %v", c.Markers, err)
				}
				return points, markers, c.From, c.To
			}
			n, markers, from, to := chartOf("soil_humidity")
			bedPts := history(garden+"/beds/"+bed+"/history", from, to)
			if n != count(bedPts, "soil_humidity") || n < 200 {
				p.errorf("bed chart: %d points, the API has %d", n, count(bedPts, "soil_humidity"))
			}
			var logs struct {
				Logs []struct{ Type, Title string }
			}
			d.api(t, "GET", garden+"/logs?bed="+bed+"&from="+url.QueryEscape(from)+"&limit=200", nil, 200, &logs)
			waterings := 0
			for _, l := range logs.Logs {
				if l.Type != "task" {
					waterings++
				}
			}
			if markers != waterings || markers < 3 {
				p.errorf("%d markers; the logbook has %d entries of the bed in range", markers, waterings)
			}
			p.do("show the water level", chromedp.SetValue(chromedp.CSS(`#chart-value`), "water"),
				chromedp.Evaluate[chromedp.Void](`document.querySelector('#chart-value').dispatchEvent(new Event('change'))`))
			if n, _, from, to := chartOf("water"); n != count(history(garden+"/beds/"+bed+"/history", from, to), "water") {
				p.errorf("water chart: %d points", n)
			}
			var plant string
			p.eval(`document.querySelector('#chart-subject').options[2].value`, &plant)
			p.do("show a plant", chromedp.SetValue(chromedp.CSS(`#chart-subject`), plant),
				chromedp.Evaluate[chromedp.Void](`document.querySelector('#chart-subject').dispatchEvent(new Event('change'))`))
			p.waitFor("the plant's chart", `document.querySelector('.panel-history .chart-box').dataset.subject === `+jsString(plant)+` && document.querySelector('.panel-history .chart-box').dataset.state === 'drawn'`)
			n, _, from, to = chartOf("water")
			plantPts := history(garden+"/beds/"+bed+"/plants/"+url.PathEscape(plant)+"/history", from, to)
			if n != count(plantPts, "water") || len(plantPts) < 200 {
				p.errorf("plant chart: %d points, the API has %d of %d", n, count(plantPts, "water"), len(plantPts))
			}
			p.checkClean()

			// A task from the first alert without one (the demo user administers the
			// garden).
			var id string
			p.eval(`(() => { const li = [...document.querySelectorAll('.attention li.alert')].find((l) => l.querySelector('button.make-task')); return li ? li.dataset.alert : ''; })()`, &id)
			if id == "" {
				p.fatalf("no alert offers to make a task")
			}
			sel := `.attention li.alert[data-alert="` + id + `"]`
			p.do("make it a task", chromedp.Click(chromedp.CSS(sel+` button.make-task`)))
			p.waitFor("the task form", `document.querySelector('`+sel+` form.task-form')`)
			p.do("create it", chromedp.SendKeys(chromedp.CSS(sel+` input[name=assignee]`), server.DemoUsername),
				chromedp.Click(chromedp.CSS(sel+` form.task-form button[type=submit]`)))
			p.waitFor("the task made", `document.querySelector('`+sel+` .task-made')`)
			var task string
			p.eval(`document.querySelector('`+sel+` .task-made').dataset.task`, &task)
			var a struct{ Alerts []alertJSON }
			d.api(t, "GET", garden+"/alerts", nil, 200, &a)
			found := false
			for _, x := range a.Alerts {
				if fmt.Sprint(x.ID) == id {
					found = x.Task != nil && fmt.Sprint(*x.Task) == task
				}
			}
			var log struct {
				Type     string
				Assignee *string
				Bed      *uint64
				Notes    string
			}
			d.api(t, "GET", garden+"/logs/"+task, nil, 200, &log)
			if !found || log.Type != "task" || log.Assignee == nil || *log.Assignee != server.DemoUsername || log.Bed == nil || !strings.Contains(log.Notes, "What to do") {
				p.errorf("task %s of alert %s: alert names it %v; log %+v", task, id, found, log)
			}
			p.checkClean()
		})
	}
}

// TestDocScreenshotsHistory writes the screenshots of what needs attention and of
// history (docs/webapp.md) into GARDEND_DOC_SCREENSHOTS; without it the test does
// nothing.
//
//	GARDEND_DOC_SCREENSHOTS=$PWD/docs go test ./server/web -run TestDocScreenshotsHistory
func TestDocScreenshotsHistory(t *testing.T) {
	dir := os.Getenv("GARDEND_DOC_SCREENSHOTS")
	if dir == "" {
		t.Skip("set GARDEND_DOC_SCREENSHOTS to a directory to write the screenshots")
	}
	b := newBrowser(t)
	d := startDemo(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := d.srv.WaitCloudsIdle(ctx); err != nil {
		t.Fatal(err)
	}
	shot := func(pg *page, name string) {
		png, err := chromedp.Run(pg.ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, size := range []struct{ w, h int64 }{{1366, 768}, {390, 844}} {
		p := b.page(t, d.base, size.w, size.h)
		suffix := fmt.Sprintf("-%dx%d.png", size.w, size.h)
		p.login(server.DemoUsername, server.DemoPassword)
		p.waitFor("the alerts", `document.querySelector('.attention[data-state=loaded]')`)
		p.eval(`document.querySelector('li.alert details').open = true; true`, nil)
		shot(p, "webapp-attention"+suffix)
		p.open("#/c/1/g/1")
		p.waitFor("every plant placed", `document.querySelector('main').dataset.settled === 'true'`)
		p.eval(`document.querySelector('.panel-beds tbody tr').click(); true`, nil)
		p.waitFor("the chart", `document.querySelector('.panel-history .chart-box[data-state=drawn]')`)
		p.eval(`document.querySelector('.trends-box').scrollIntoView({block: 'center'}); true`, nil)
		p.waitFor("the trends", `document.querySelectorAll('.panel-beds .trend[data-points]').length >= 3`)
		shot(p, "webapp-trends"+suffix)
		p.eval(`document.querySelector('.panel-history').scrollIntoView(); true`, nil)
		time.Sleep(200 * time.Millisecond)
		shot(p, "webapp-history"+suffix)
		p.checkClean()
	}
}

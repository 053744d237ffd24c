package web_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/store"
)

// The logbook's journeys in a real browser, at a desktop's 1366 × 768 and a phone's
// 390 × 844: tables that fit (cards on the phone), health by the aspect picked,
// harvest in words, bed names, the timeline with its filters and pages, quick entry
// with a photo, a box that does not answer and an answer that is lost, tasks, and
// the exports. One browser and one server for all; every step ends with no console
// error and no request to another host.

// logbookEnv is the demo server with one bed removed and registered again, so that
// its id (7) and its name ("Bed 6") differ, a second user with a role, and two
// logged-in pages.
type logbookEnv struct {
	b           *browser
	d           *demoServer
	desk, phone *page
	garden      string // API path of the demo garden
	hash        string // the garden page
	bed         uint64 // the bed registered again: id 7, named "Bed 6"
	removedBed  uint64 // its old id
	plants      []apiPlant
}

type apiPlant struct {
	ID      string
	Plant   string
	Variety string
	Harvest string
	Health  []struct {
		Type     string
		Loglevel int
	}
}

func newLogbookEnv(t *testing.T) *logbookEnv {
	t.Helper()
	e := &logbookEnv{b: newBrowser(t), d: startDemo(t, 0)}
	e.garden = e.d.srv.DemoGardenPath()
	e.hash = "#/c/1/g/1"
	beds := demoBeds(t, e.d)
	last := beds[len(beds)-1]
	e.removedBed = last.id
	e.d.api(t, "POST", e.garden+"/logs", map[string]any{"type": "observation", "title": "Before the bed moved", "bed": last.id}, 201, nil)
	e.d.api(t, "DELETE", fmt.Sprintf("%s/beds/%d", e.garden, last.id), nil, 200, nil)
	var bed struct{ ID uint64 }
	e.d.api(t, "POST", e.garden+"/beds", map[string]string{"uuid": last.uuid, "name": fmt.Sprintf("Bed %d", last.id)}, 201, &bed)
	e.bed = bed.ID
	if e.bed == e.removedBed {
		t.Fatalf("the bed kept its id %d", e.bed)
	}
	var plants struct{ Plants []apiPlant }
	e.d.api(t, "GET", fmt.Sprintf("%s/beds/%d/plants", e.garden, e.bed), nil, 200, &plants)
	e.plants = plants.Plants
	if len(e.plants) < 5 {
		t.Fatalf("%d plants in the bed", len(e.plants))
	}
	e.d.api(t, "POST", "/register", map[string]string{"username": "helper", "password": "helper-password", "first_name": "H", "last_name": "P"}, 201, nil)
	e.d.api(t, "POST", e.garden+"/createPermission", map[string]string{"username": "helper", "permission": "u"}, 201, nil)

	e.desk = e.b.page(t, e.d.base, 1366, 768)
	e.phone = e.b.page(t, e.d.base, 390, 844)
	for _, p := range []*page{e.desk, e.phone} {
		p.login(server.DemoUsername, server.DemoPassword)
	}
	return e
}

func (e *logbookEnv) pages() []*page { return []*page{e.desk, e.phone} }

// size names a page's viewport in subtest names.
func (e *logbookEnv) size(p *page) string {
	if p == e.desk {
		return "1366x768"
	}
	return "390x844"
}

// bedName is the renamed bed's name; "Bed <its id>" must never show.
func (e *logbookEnv) bedName() string { return fmt.Sprintf("Bed %d", e.removedBed) }

func (e *logbookEnv) wrongBedName() string { return fmt.Sprintf("Bed %d", e.bed) }

// createLog makes a log through the API as the demo user.
func (e *logbookEnv) createLog(t testing.TB, body map[string]any) store.Log {
	t.Helper()
	var l store.Log
	e.d.api(t, "POST", e.garden+"/logs", body, 201, &l)
	return l
}

func (e *logbookEnv) logs(t testing.TB, query string) []store.Log {
	t.Helper()
	var page struct{ Logs []store.Log }
	e.d.api(t, "GET", e.garden+"/logs?limit=200&"+query, nil, 200, &page)
	return page.Logs
}

// noWrongBedName: the page never calls the renamed bed by its id.
func (e *logbookEnv) noWrongBedName(p *page) {
	p.t.Helper()
	var text string
	p.eval(`document.body.innerText`, &text)
	if regexp.MustCompile(`\b` + e.wrongBedName() + `\b`).MatchString(text) {
		p.errorf("the page calls a bed %q, registered as %q", e.wrongBedName(), e.bedName())
	}
}

func TestLogbookWebApp(t *testing.T) {
	e := newLogbookEnv(t)

	for _, p := range e.pages() {
		t.Run("tables fit "+e.size(p), func(t *testing.T) {
			p.t = t
			p.visit(e.hash)
			p.waitFor("the garden drawn", `document.querySelector('main').dataset.drawn`)
			p.eval(`document.querySelector('.panel-beds').scrollIntoView(); true`, nil)
			checkTableFit(p, ".panel-beds", []string{"Bed", "Plant", "Health", "Soil humidity", "Harvest", "Position"}, p == e.desk)
			p.clickJS("select the renamed bed", fmt.Sprintf(`.panel-beds tr[data-key="%d"]`, e.bed))
			p.waitFor("its plants", fmt.Sprintf(`document.querySelector('#plants-h').textContent === 'Plants of %s'`, e.bedName()))
			checkTableFit(p, ".panel-plants", []string{"Plant", "Species", "Health", "Soil humidity", "Harvest", "Position"}, false)
			e.noWrongBedName(p)
			docShot(p, "webapp-tables-"+e.size(p)+".png")
			// The bed's page: its values, its plants, nothing wider than the screen.
			p.visit(fmt.Sprintf("#/c/1/g/1/b/%d/log", e.bed))
			p.waitFor("the bed's plants", `document.querySelector('.col-more .table-wrap tbody tr')`)
			checkTableFit(p, ".col-more", []string{"Plant", "Health", "Soil humidity", "Harvest", "Position"}, false)
			var h1 string
			p.eval(`document.querySelector('h1').textContent`, &h1)
			if h1 != e.bedName() {
				p.errorf("the bed's page is titled %q", h1)
			}
			e.noWrongBedName(p)
			docShot(p, "webapp-bed-"+e.size(p)+".png")
			p.checkClean()
		})
	}

	t.Run("health by aspect and harvest in words", func(t *testing.T) {
		for _, p := range e.pages() {
			p.t = t
			p.visit(e.hash)
			p.waitFor("the garden drawn", `document.querySelector('main').dataset.drawn`)
			p.clickJS("select the renamed bed", fmt.Sprintf(`.panel-beds tr[data-key="%d"]`, e.bed))
			p.waitFor("its plants", `document.querySelector('.panel-plants tbody tr')`)
			for _, aspect := range []string{"water", "nutrients", "diseases", "worst"} {
				p.eval(fmt.Sprintf(`(() => { const s = document.querySelector('.title-row .aspect-picker'); s.value = %q; s.dispatchEvent(new Event('change')); return true; })()`, aspect), nil)
				var got []string
				p.eval(`[...document.querySelectorAll('.panel-plants tbody tr')].map((tr) => tr.querySelector('td[data-col=health] .health').dataset.cls)`, &got)
				if len(got) != len(e.plants) {
					p.fatalf("%d plant rows, the API has %d", len(got), len(e.plants))
				}
				for i, pl := range e.plants {
					if want := levelClassOf(pl, aspect); got[i] != want {
						p.errorf("%s: plant %d coloured %s, its level is %s", aspect, i+1, got[i], want)
						break
					}
				}
				// The map's dots follow the same choice.
				var dots []string
				p.eval(fmt.Sprintf(`[...document.querySelectorAll('circle.plant[data-bed="%d"]')].map((c) => [...c.classList].find((x) => /^lv/.test(x)))`, e.bed), &dots)
				for _, d := range dots {
					if !strings.HasPrefix(d, "lv") {
						p.errorf("%s: a dot without a level class", aspect)
					}
				}
			}
			var texts []string
			p.eval(`[...document.querySelectorAll('td[data-col=harvest]')].map((td) => td.textContent)`, &texts)
			for _, s := range texts {
				if regexp.MustCompile(`^\d+ weeks?$`).MatchString(s) || !strings.HasPrefix(s, "ready") && s != "–" {
					p.errorf("harvest shown as %q", s)
				}
			}
			p.checkClean()
		}
		// The words for the seed's "<n> week", from the app's own module.
		var words map[string]string
		e.desk.eval(`import(document.querySelector('script[type=module]').src.replace('main.js', 'health.js')).then((m) =>
			Object.fromEntries(['0 week', '1 week', '3 week', '39 week', '108 week', 'soon'].map((v) => [v, m.harvestText(v)])))`, &words)
		want := map[string]string{"0 week": "ready now", "1 week": "ready in 1 week", "3 week": "ready in 3 weeks",
			"39 week": "ready in ~39 weeks (about 9 months)", "108 week": "ready in ~108 weeks (over 2 years)", "soon": "soon"}
		for k, v := range want {
			if words[k] != v {
				t.Errorf("harvest %q reads %q, want %q", k, words[k], v)
			}
		}
	})

	plant := e.plants[2]
	plantHash := fmt.Sprintf("#/c/1/g/1/b/%d/p/%s", e.bed, plant.ID)
	bedHash := fmt.Sprintf("#/c/1/g/1/b/%d/log", e.bed)
	photo := testJPEG(t, 640, 480)

	t.Run("quick entry with a photo 390x844", func(t *testing.T) {
		p := e.phone
		p.t = t
		p.visit(plantHash)
		p.waitFor("the quick entry", `document.querySelector('.quick-kinds button[data-kind=observed]') && document.querySelector('.col-logs .timeline-box')?.dataset.loaded === 'true'`)
		p.do("tap observed", chromedp.Click(chromedp.CSS(`button[data-kind=observed]`)))
		p.waitFor("the form", `document.querySelector('form.entry-form[data-kind=observed]')`)
		p.do("type notes", chromedp.SendKeys(chromedp.CSS(`#qe-notes`), "Yellow spots on the lower leaves"))
		p.do("take a photo", chromedp.SetUploadFiles(chromedp.CSS(`#qe-photo`), []string{photo}))
		p.waitFor("the photo's preview", `document.querySelector('.photo-preview img')`)
		docShot(p, "webapp-quick-entry-390x844.png")
		p.do("save", chromedp.Click(chromedp.CSS(`form.entry-form button[type=submit]`)))
		p.waitFor("saved", `document.querySelector('.entry-status [data-saved]')`)
		logs := e.logs(t, "plant="+plant.ID)
		if len(logs) != 1 {
			p.fatalf("%d logs of the plant", len(logs))
		}
		l := logs[0]
		if l.Type != store.LogObservation || l.Title != "Observed" || l.Notes != "Yellow spots on the lower leaves" || l.Bed == nil || *l.Bed != e.bed ||
			l.Plant == nil || *l.Plant != plant.ID || len(l.Photos) != 1 || l.Author != server.DemoUsername {
			p.errorf("stored %+v", l)
		}
		// The plant's logbook shows it, photo and all, with the bed's and plant's names.
		p.waitFor("the entry with its photo", fmt.Sprintf(`document.querySelector('li.log[data-id="%d"] .photo-thumb[data-loaded]')`, l.ID))
		var meta string
		p.eval(fmt.Sprintf(`document.querySelector('li.log[data-id="%d"] .log-meta').textContent`, l.ID), &meta)
		if !strings.Contains(meta, e.bedName()) || !strings.Contains(meta, "#3 "+plant.Plant) {
			p.errorf("the entry's line reads %q", meta)
		}
		// A harvest, by quantity.
		p.do("tap harvested", chromedp.Click(chromedp.CSS(`button[data-kind=harvested]`)))
		p.waitFor("the harvest form", `document.querySelector('form.entry-form[data-kind=harvested] #qe-qty')`)
		p.do("how much", chromedp.SendKeys(chromedp.CSS(`#qe-qty`), "2.5"))
		p.do("save", chromedp.Click(chromedp.CSS(`form.entry-form button[type=submit]`)))
		p.waitFor("saved", `document.querySelector('.entry-status [data-saved]') && !document.querySelector('form.entry-form')`)
		harvests := e.logs(t, "type=harvest&plant="+plant.ID)
		if len(harvests) != 1 || harvests[0].Quantity == nil || *harvests[0].Quantity != (store.Quantity{Value: 2.5, Unit: "kg"}) || harvests[0].Title != "Harvested" {
			p.errorf("harvests %+v", harvests)
		}
		p.waitFor("two entries", `document.querySelector('.col-logs .timeline-box')?.dataset.count === '2'`)
		docShot(p, "webapp-plant-390x844.png")
		e.noWrongBedName(p)
		p.checkClean()
	})

	t.Run("quick entry watered 1366x768", func(t *testing.T) {
		p := e.desk
		p.t = t
		p.visit(bedHash)
		p.waitFor("the quick entry", `document.querySelector('.quick-kinds button[data-kind=watered]')`)
		p.do("tap watered", chromedp.Click(chromedp.CSS(`button[data-kind=watered]`)))
		p.waitFor("the form", `document.activeElement && document.activeElement.type === 'submit'`)
		p.do("save at once", chromedp.KeyEvent("\r"))
		p.waitFor("saved", `document.querySelector('.entry-status [data-saved]')`)
		got := e.logs(t, fmt.Sprintf("type=activity&bed=%d", e.bed))
		if len(got) != 1 || got[0].Title != "Watered" || got[0].Plant != nil {
			p.errorf("activities %+v", got)
		}
		p.checkClean()
	})

	for _, p := range e.pages() {
		t.Run("the box does not answer "+e.size(p), func(t *testing.T) {
			p.t = t
			title := "Aphids on the stems at " + e.size(p)
			p.visit(plantHash)
			p.waitFor("the quick entry", `document.querySelector('.quick-kinds button[data-kind=observed]')`)
			p.do("tap observed", chromedp.Click(chromedp.CSS(`button[data-kind=observed]`)))
			p.waitFor("the form", `document.querySelector('form.entry-form')`)
			p.eval(`document.querySelector('#qe-title').value = ''`, nil)
			p.do("type", chromedp.SendKeys(chromedp.CSS(`#qe-title`), title),
				chromedp.SendKeys(chromedp.CSS(`#qe-notes`), "Many, on the young shoots"))
			// Every request to the box fails before it gets there.
			stop := p.intercept(func(*fetch.EventRequestPaused) network.ErrorReason { return network.ErrorReasonConnectionRefused })
			p.do("save", chromedp.Click(chromedp.CSS(`form.entry-form button[type=submit]`)))
			p.waitFor("the failure", `document.querySelector('form.entry-form .unreachable')`)
			var state struct {
				Message, Title, Notes, Button string
				Kept                          int
			}
			p.eval(`({Message: document.querySelector('.unreachable').textContent, Title: document.querySelector('#qe-title').value,
			Notes: document.querySelector('#qe-notes').value, Button: document.querySelector('form.entry-form button[type=submit]').textContent,
			Kept: JSON.parse(localStorage.getItem('gardend.outbox.demo')).filter((e) => e.state === 'failed').length})`, &state)
			if !strings.Contains(state.Message, "did not answer") || state.Title != title || state.Notes != "Many, on the young shoots" || state.Button != "Retry" || state.Kept != 1 {
				p.errorf("after the failure: %+v", state)
			}
			p.eval(`document.querySelector('form.entry-form .actions').scrollIntoView({block: 'end'}); true`, nil)
			if p == e.phone {
				docShot(p, "webapp-not-sent-390x844.png")
			}
			stop()
			// The page is loaded again (the phone closed the tab meanwhile): the entry is back.
			p.do("reload", chromedp.Navigate(e.d.base+"/"+plantHash))
			p.waitFor("the entry restored", `document.querySelector('form.entry-form #qe-title') && document.querySelector('#qe-title').value === `+jsString(title))
			var outbox bool
			p.eval(`!document.querySelector('.outbox').hidden && document.querySelector('.outbox li').textContent.includes(`+jsString(title)+`)`, &outbox)
			if !outbox {
				p.errorf("the entry is not listed as not sent")
			}
			p.do("retry", chromedp.Click(chromedp.CSS(`form.entry-form button[type=submit]`)))
			p.waitFor("saved", `document.querySelector('.entry-status [data-saved]') && document.querySelector('.outbox').hidden`)
			if n := countTitled(e.logs(t, "plant="+plant.ID), title); n != 1 {
				p.errorf("%d logs of the entry", n)
			}
			p.checkClean("/companies/1/gardens/1/logs")
		})
	}

	for _, size := range [][2]int64{{1366, 768}, {390, 844}} {
		t.Run(fmt.Sprintf("an answer is lost %dx%d", size[0], size[1]), func(t *testing.T) {
			title := fmt.Sprintf("Slugs after the rain at %dx%d", size[0], size[1])
			// A link that loses the box's answers to POSTs of logs, then of photos: the
			// box gets each request and acts on it, but its answer never arrives
			// (Chromium even resends such a POST by itself, and loses that answer too).
			var loseLogs, losePhotos atomic.Bool
			var posts atomic.Int32
			proxy := newLossyProxy(t, e.d.base, func(r *http.Request) bool {
				if r.Method != "POST" || !strings.HasPrefix(r.URL.Path, "/companies/") {
					return false
				}
				posts.Add(1)
				if strings.HasSuffix(r.URL.Path, "/photos") {
					return losePhotos.Load()
				}
				return loseLogs.Load()
			})
			p := e.b.page(t, proxy, size[0], size[1])
			p.login(server.DemoUsername, server.DemoPassword)
			p.visit(plantHash)
			p.waitFor("the quick entry", `document.querySelector('.quick-kinds button[data-kind=observed]')`)
			p.do("tap observed", chromedp.Click(chromedp.CSS(`button[data-kind=observed]`)))
			p.waitFor("the form", `document.querySelector('form.entry-form')`)
			p.eval(`document.querySelector('#qe-title').value = ''`, nil)
			p.do("type", chromedp.SendKeys(chromedp.CSS(`#qe-title`), title))
			p.do("take a photo", chromedp.SetUploadFiles(chromedp.CSS(`#qe-photo`), []string{photo}))
			p.waitFor("the photo's preview", `document.querySelector('.photo-preview img')`)
			failed := `document.querySelector('form.entry-form .unreachable') && !document.querySelector('form.entry-form button[type=submit]').disabled`
			mine := func() []store.Log {
				var out []store.Log
				for _, l := range e.logs(t, "plant="+plant.ID) {
					if l.Title == title {
						out = append(out, l)
					}
				}
				return out
			}

			// The log's answers are lost: the page says so; the box holds one log.
			loseLogs.Store(true)
			p.do("save", chromedp.Click(chromedp.CSS(`form.entry-form button[type=submit]`)))
			p.waitFor("the failure", failed)
			if got := mine(); len(got) != 1 || posts.Load() < 1 {
				p.fatalf("%d logs after %d POSTs whose answers were lost", len(got), posts.Load())
			}
			// Typed while the box seemed away: it reaches the log the first try made.
			p.do("add notes", chromedp.SendKeys(chromedp.CSS(`#qe-notes`), "Under the boards"))

			// The retry finds that log; now the photo's answers are lost.
			loseLogs.Store(false)
			losePhotos.Store(true)
			p.do("retry", chromedp.Click(chromedp.CSS(`form.entry-form button[type=submit]`)))
			p.waitFor("the photo's failure", failed)
			if got := mine(); len(got) != 1 || len(got[0].Photos) != 1 || got[0].Notes != "Under the boards" {
				p.fatalf("after the photo's lost answer: %+v", got)
			}

			// The last retry finds the photo there too.
			losePhotos.Store(false)
			p.do("retry again", chromedp.Click(chromedp.CSS(`form.entry-form button[type=submit]`)))
			p.waitFor("saved", `document.querySelector('.entry-status [data-saved]')`)
			got := mine()
			if len(got) != 1 || len(got[0].Photos) != 1 || got[0].Notes != "Under the boards" {
				p.errorf("after the retries: %+v", got)
			}
			var text string
			p.eval(`document.querySelector('.entry-status').textContent`, &text)
			if text != "Saved: "+title+" (with photo)." {
				p.errorf("the page says %q", text)
			}
			p.checkClean("/companies/1/gardens/1/logs", fmt.Sprintf("/companies/1/gardens/1/logs/%d/photos", got[0].ID))
		})
	}

	t.Run("task for someone, and my tasks", func(t *testing.T) {
		p := e.desk
		p.t = t
		p.visit(bedHash)
		p.waitFor("the quick entry", `document.querySelector('.quick-kinds button[data-kind=task]')`)
		p.do("tap task for", chromedp.Click(chromedp.CSS(`button[data-kind=task]`)))
		p.waitFor("the people", `document.querySelector('#qe-assignee').dataset.loaded`)
		var people []string
		p.eval(`[...document.querySelectorAll('#qe-assignee option')].map((o) => o.value)`, &people)
		if strings.Join(people, ",") != ",demo,helper" {
			p.errorf("assignees offered %v", people)
		}
		p.eval(`(() => { const s = document.querySelector('#qe-assignee'); s.value = 'demo'; s.dispatchEvent(new Event('input', {bubbles: true})); return true; })()`, nil)
		p.do("what to do", chromedp.SendKeys(chromedp.CSS(`#qe-title`), "Tie up the tomatoes"))
		p.do("save", chromedp.Click(chromedp.CSS(`form.entry-form button[type=submit]`)))
		p.waitFor("saved", `document.querySelector('.entry-status [data-saved]')`)
		tasks := e.logs(t, "type=task&status=pending")
		if len(tasks) != 1 || tasks[0].Assignee == nil || *tasks[0].Assignee != "demo" || tasks[0].Bed == nil || *tasks[0].Bed != e.bed ||
			!tasks[0].At.After(time.Now()) {
			p.fatalf("tasks %+v", tasks)
		}
		// Readers get no "task for…".
		var readerKinds []string
		helper := e.b.page(t, e.d.base, 390, 844)
		helper.login("helper", "helper-password")
		helper.visit(bedHash)
		helper.waitFor("the quick entry", `document.querySelector('.quick-kinds button')`)
		helper.eval(`[...document.querySelectorAll('.quick-kinds button')].map((b) => b.dataset.kind)`, &readerKinds)
		if strings.Join(readerKinds, ",") != "observed,watered,harvested" {
			helper.errorf("a reader is offered %v", readerKinds)
		}
		helper.checkClean()
		for _, pg := range e.pages() {
			pg.t = t
			pg.visit("#/tasks")
			pg.waitFor("my tasks", `document.querySelector('ol.tasks') && document.querySelector('ol.tasks .bed-name') && document.querySelector('ol.tasks .bed-name').textContent !== '…'`)
			var item string
			pg.eval(`document.querySelector('ol.tasks li').textContent`, &item)
			if !strings.Contains(item, "Tie up the tomatoes") || !strings.Contains(item, server.DemoGardenName) || !strings.Contains(item, e.bedName()) || !strings.Contains(item, "tomorrow") {
				pg.errorf("the task reads %q", item)
			}
			var wide struct{ Scroll, Inner int }
			pg.eval(`({Scroll: document.documentElement.scrollWidth, Inner: innerWidth})`, &wide)
			if wide.Scroll > wide.Inner {
				pg.errorf("my tasks are %d px wide in %d", wide.Scroll, wide.Inner)
			}
			e.noWrongBedName(pg)
		}
		docShot(e.phone, "webapp-tasks-390x844.png")
		p = e.phone
		p.do("done", chromedp.Click(chromedp.CSS(`ol.tasks li button.primary`)))
		p.waitFor("gone", `document.querySelector('ol.tasks')?.dataset.count === '0'`)
		if got := e.logs(t, "type=task"); len(got) != 1 || got[0].Status != store.LogDone {
			p.errorf("the task after done: %+v", got)
		}
		for _, pg := range e.pages() {
			pg.checkClean()
		}
	})

	t.Run("the timeline, its filters and pages", func(t *testing.T) {
		first := demoBeds(t, e.d)[0].id
		now := time.Now().UTC()
		for i := range 55 {
			body := map[string]any{"title": fmt.Sprintf("Round %d", i), "at": now.Add(-time.Duration(i+10) * time.Minute).Format(time.RFC3339)}
			switch i % 3 {
			case 0:
				body["type"] = "observation"
			case 1:
				body["type"] = "activity"
			default:
				body["type"], body["quantity"] = "harvest", map[string]any{"value": i, "unit": "pieces"}
			}
			if i%5 == 0 {
				body["notes"] = "Aphids again on the north side"
			}
			if i%2 == 0 {
				body["bed"] = e.bed
			} else {
				body["bed"] = first
			}
			e.createLog(t, body)
		}
		all := e.logs(t, "")
		if len(all) < 60 {
			t.Fatalf("%d logs", len(all))
		}
		for _, p := range e.pages() {
			p.t = t
			p.visit("#/c/1/g/1/logbook")
			p.waitFor("the first page", `document.querySelector('.timeline-box')?.dataset.loaded === 'true'`)
			var page struct {
				Count, More string
			}
			p.eval(`({Count: document.querySelector('.timeline-box')?.dataset.count, More: document.querySelector('.timeline-box')?.dataset.more})`, &page)
			if page.Count != "50" || page.More != "true" {
				p.errorf("first page %+v", page)
			}
			// The demo's seeded waterings and harvests make it more than two pages.
			for n := 50; n+50 < len(all); n += 50 {
				p.do("more", chromedp.Click(chromedp.CSS(`button.more`)))
				p.waitFor("the next page", fmt.Sprintf(`document.querySelector('.timeline-box')?.dataset.count === '%d' && document.querySelector('.timeline-box')?.dataset.loaded === 'true'`, n+50))
			}
			p.do("more", chromedp.Click(chromedp.CSS(`button.more`)))
			p.waitFor("every entry", fmt.Sprintf(`document.querySelector('.timeline-box')?.dataset.count === '%d' && document.querySelector('.timeline-box')?.dataset.more === 'false'`, len(all)))
			var ids []uint64
			p.eval(`[...document.querySelectorAll('.timeline li.log')].map((li) => +li.dataset.id)`, &ids)
			for i, l := range all {
				if i >= len(ids) || ids[i] != l.ID {
					p.errorf("entry %d is %v, the API lists %d", i, ids[min(i, len(ids)-1)], l.ID)
					break
				}
			}
			for _, c := range []struct{ name, value, query string }{
				{"type", "harvest", "type=harvest"},
				{"bed", fmt.Sprint(e.bed), fmt.Sprintf("bed=%d", e.bed)},
				{"status", "pending", "status=pending"},
			} {
				p.eval(`(() => { document.querySelector('form.filters').reset(); return true; })()`, nil)
				p.waitFor("cleared", `document.querySelector('.timeline-box')?.dataset.loaded === 'true' && !location.hash.includes('?')`)
				p.eval(fmt.Sprintf(`(() => { const s = document.querySelector('#lf-%s'); s.value = %q; s.dispatchEvent(new Event('change', {bubbles: true})); return true; })()`, c.name, c.value), nil)
				want := e.logs(t, c.query)
				p.waitFor(c.query, fmt.Sprintf(`location.hash.endsWith(%q) && document.querySelector('.timeline-box')?.dataset.loaded === 'true' && document.querySelector('.timeline-box')?.dataset.count === '%d'`, "?"+c.query, len(want)))
			}
			// Words, with the filters above in place: then a reload keeps them.
			p.eval(`(() => { const f = document.querySelector('form.filters'); f.reset(); return true; })()`, nil)
			p.waitFor("cleared", `!location.hash.includes('?')`)
			p.eval(fmt.Sprintf(`(() => { const s = document.querySelector('#lf-bed'); s.value = '%d'; return true; })()`, e.bed), nil)
			p.do("search", chromedp.SendKeys(chromedp.CSS(`#lf-q`), "aphids\r"))
			want := e.logs(t, fmt.Sprintf("bed=%d&q=aphids", e.bed))
			if len(want) == 0 {
				t.Fatal("no log to find")
			}
			cond := fmt.Sprintf(`document.querySelector('.timeline-box')?.dataset.loaded === 'true' && document.querySelector('.timeline-box')?.dataset.count === '%d'`, len(want))
			p.waitFor("the search", cond)
			var hash string
			p.eval(`location.hash`, &hash)
			p.do("reload", chromedp.Navigate(e.d.base+"/"+hash))
			p.waitFor("the search again", cond+` && document.querySelector('#lf-q').value === 'aphids' && document.querySelector('#lf-bed').value === '`+fmt.Sprint(e.bed)+`'`)
			var metas []string
			p.eval(`[...document.querySelectorAll('.timeline li.log .log-meta')].map((m) => m.textContent)`, &metas)
			for _, m := range metas {
				if !strings.Contains(m, e.bedName()) {
					p.errorf("an entry of the bed reads %q", m)
				}
			}
			var wide struct{ Scroll, Inner int }
			p.eval(`({Scroll: document.documentElement.scrollWidth, Inner: innerWidth})`, &wide)
			if wide.Scroll > wide.Inner {
				p.errorf("the logbook is %d px wide in %d", wide.Scroll, wide.Inner)
			}
			docShot(p, "webapp-logbook-"+e.size(p)+".png")
			// The entry of the removed bed says so, and cannot pass for the bed now
			// named as the removed one's id.
			p.do("search the removed bed's entry", chromedp.SetValue(chromedp.CSS(`#lf-q`), "moved"), chromedp.SetValue(chromedp.CSS(`#lf-bed`), ""))
			p.eval(`document.querySelector('form.filters').requestSubmit(); true`, nil)
			p.waitFor("the removed bed's entry", `document.querySelector('.timeline-box')?.dataset.loaded === 'true' && document.querySelector('.timeline-box')?.dataset.count === '1'`)
			var removed string
			p.eval(`document.querySelector('.timeline li.log .bed-name').textContent`, &removed)
			if want := fmt.Sprintf("removed bed with id %d", e.removedBed); removed != want {
				p.errorf("the removed bed's entry names it %q, want %q", removed, want)
			}
			e.noWrongBedName(p)
			p.checkClean()
		}
	})

	t.Run("exports", func(t *testing.T) {
		dir := t.TempDir()
		if _, err := chromedp.CallBrowser(e.desk.ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
			Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir}); err != nil {
			t.Fatal(err)
		}
		files := []string{"plants.geojson", "plants.csv", "beds.csv", "logs.csv", "logs.geojson", "garden.zip"}
		for _, p := range e.pages() {
			p.t = t
			p.visit("#/c/1/g/1/logbook")
			p.waitFor("the export buttons", `document.querySelectorAll('.export-panel button[data-file]').length === 6`)
			for _, f := range files {
				if p == e.phone && f != "beds.csv" {
					continue
				}
				name := exportName(t, e, f)
				if err := os.Remove(filepath.Join(dir, name)); err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
				p.do("export "+f, chromedp.Click(chromedp.CSS(fmt.Sprintf(`.export-panel button[data-file=%q]`, f))))
				p.waitFor(f+" saved", fmt.Sprintf(`document.querySelector('.export-status [data-file=%q]')`, f))
				var shown string
				p.eval(`document.querySelector('.export-status [data-name]').dataset.name`, &shown)
				if shown != name {
					p.errorf("%s saved as %q, the box names it %q", f, shown, name)
				}
				data := waitFile(t, filepath.Join(dir, name))
				checkExport(t, e, f, data)
			}
			p.checkClean()
		}
	})
}

// exportName is the file name the box gives an export (Content-Disposition's
// filename*).
func exportName(t *testing.T, e *logbookEnv, file string) string {
	t.Helper()
	req, _ := http.NewRequest("HEAD", e.d.base+e.garden+"/export/"+file, nil)
	req.Header.Set("Authorization", "Token "+e.d.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	_, params, err := mime.ParseMediaType(res.Header.Get("Content-Disposition"))
	if err != nil || params["filename"] == "" {
		t.Fatalf("%s: Content-Disposition %q: %v", file, res.Header.Get("Content-Disposition"), err)
	}
	return params["filename"]
}

// waitFile returns the content of a download once the browser has finished it.
func waitFile(t *testing.T, path string) []byte {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if data, err := os.ReadFile(path); err == nil && len(data) > 0 {
			if _, err := os.Stat(path + ".crdownload"); os.IsNotExist(err) {
				return data
			}
		}
		if time.Now().After(deadline) {
			entries, _ := os.ReadDir(filepath.Dir(path))
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Fatalf("no download %s (the directory holds %v)", filepath.Base(path), names)
		}
		time.Sleep(50 * time.Millisecond) // the browser writes the file on its own
	}
}

// checkExport: each downloaded file is what it says, with the bed's name.
func checkExport(t *testing.T, e *logbookEnv, file string, data []byte) {
	t.Helper()
	switch {
	case strings.HasSuffix(file, ".csv"):
		rows, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
		if err != nil || len(rows) < 2 {
			t.Fatalf("%s: %d rows, %v", file, len(rows), err)
		}
		if !bytes.Contains(data, []byte(e.bedName())) {
			t.Errorf("%s does not name %q", file, e.bedName())
		}
		if regexp.MustCompile(`\b` + e.wrongBedName() + `\b`).Match(data) {
			t.Errorf("%s calls a bed %q", file, e.wrongBedName())
		}
	case strings.HasSuffix(file, ".geojson"):
		var fc struct {
			Type     string
			Features []json.RawMessage
		}
		if err := json.Unmarshal(data, &fc); err != nil || fc.Type != "FeatureCollection" || len(fc.Features) == 0 {
			t.Errorf("%s: %s, %d features, %v", file, fc.Type, len(fc.Features), err)
		}
	case file == "garden.zip":
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]bool{}
		for _, f := range zr.File {
			have[f.Name] = true
		}
		for _, want := range []string{"plants.csv", "beds.csv", "logs.csv", "plants.geojson", "logs.geojson", "image.png", "image.pgw", "image.prj"} {
			if !have[want] {
				t.Errorf("garden.zip lacks %s (has %v)", want, have)
			}
		}
	}
}

// visit opens a view of the app afresh, also when the page shows it already (setting
// the same hash would not load it again).
func (p *page) visit(hash string) {
	p.t.Helper()
	p.open("#/not-a-page")
	p.waitFor("a blank page", `document.querySelector('h1') && document.querySelector('h1').textContent === 'Not found'`)
	p.open(hash)
}

// clickJS clicks an element in one step: rows the page redraws meanwhile are found
// anew, not clicked by a stale node id.
func (p *page) clickJS(what, selector string) {
	p.t.Helper()
	var ok bool
	p.eval(fmt.Sprintf(`(() => { const el = document.querySelector(%q); if (!el) return false; el.click(); return true; })()`, selector), &ok)
	if !ok {
		p.fatalf("%s: no %s", what, selector)
	}
}

func countTitled(logs []store.Log, title string) int {
	n := 0
	for _, l := range logs {
		if l.Title == title {
			n++
		}
	}
	return n
}

// intercept makes the page's requests to the box fail before they leave the
// browser, as when the box is out of reach, while decide gives a reason; the others
// go on. stop ends it.
func (p *page) intercept(decide func(*fetch.EventRequestPaused) network.ErrorReason) (stop func()) {
	p.t.Helper()
	ctx, cancel := context.WithCancel(p.ctx)
	events := chromedp.Events(ctx, fetch.RequestPaused)
	pattern := []*fetch.RequestPattern{{URLPattern: p.base + "/companies/*"}}
	if _, err := chromedp.Call(p.ctx, fetch.Enable, fetch.EnableParams{Patterns: pattern}); err != nil {
		cancel()
		p.fatalf("intercept: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev, err := range events {
			if err != nil {
				return
			}
			var err2 error
			if reason := decide(&ev); reason != "" {
				_, err2 = chromedp.Call(p.ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: reason})
			} else {
				_, err2 = chromedp.Call(p.ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
			}
			if err2 != nil && ctx.Err() == nil {
				p.t.Errorf("intercepted %s: %v", ev.Request.URL, err2)
			}
		}
	}()
	return func() {
		if _, err := chromedp.Call(p.ctx, fetch.Disable, cdp.Empty{}); err != nil {
			p.t.Errorf("stop intercepting: %v", err)
		}
		cancel()
		<-done
	}
}

// newLossyProxy is a link to the box at base that loses the answer to each request
// lose says so of: the box gets the request and acts on it, but the connection is
// cut before its answer reaches the browser. It returns the link's base URL.
func newLossyProxy(t *testing.T, base string, lose func(*http.Request) bool) string {
	t.Helper()
	target, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !lose(r) {
			rp.ServeHTTP(w, r)
			return
		}
		out := r.Clone(r.Context())
		out.URL.Scheme, out.URL.Host, out.Host, out.RequestURI = target.Scheme, target.Host, target.Host, ""
		res, err := http.DefaultTransport.RoundTrip(out)
		if err != nil {
			t.Errorf("lossy link: %v", err)
		} else {
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("lossy link: %v", err)
			return
		}
		_ = conn.Close() // the answer is lost: nothing to report
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// levelClassOf is the colour class of a plant for an aspect, as the app must pick it.
func levelClassOf(p apiPlant, aspect string) string {
	level := -1
	for _, h := range p.Health {
		if aspect == "worst" && h.Loglevel > level || h.Type == aspect {
			level = h.Loglevel
		}
	}
	switch {
	case level < 0:
		return "lvn"
	case level >= 4:
		return "lv4"
	}
	return fmt.Sprintf("lv%d", level)
}

// checkTableFit: the table under scope shows every needed column inside its box and
// the window, with nothing to scroll sideways; as a table where wantTable, else as
// a table or as cards (on a phone, cards).
func checkTableFit(p *page, scope string, needed []string, wantTable bool) {
	p.t.Helper()
	var got struct {
		View, Problems                   string
		Scroll, Client, DocScroll, Inner int
		Checked                          int
	}
	p.eval(fmt.Sprintf(`(() => {
		const wrap = document.querySelector(%q + ' .table-wrap');
		const out = {View: wrap.dataset.view || '', Scroll: wrap.scrollWidth, Client: wrap.clientWidth,
			DocScroll: document.documentElement.scrollWidth, Inner: innerWidth, Problems: '', Checked: 0};
		const box = wrap.getBoundingClientRect();
		const inside = (r) => r.width > 4 && r.left >= box.left - 1 && r.right <= box.right + 1 && r.left >= 0 && r.right <= innerWidth;
		const needed = %s;
		if (out.View === 'table') {
			const ths = [...wrap.querySelectorAll('thead th')];
			for (const n of needed) {
				const th = ths.find((t) => t.textContent.trim().replace(/ [▲▼]$/, '') === n);
				if (!th) { out.Problems += n + ': no column; '; continue; }
				out.Checked++;
				if (!inside(th.getBoundingClientRect())) out.Problems += n + ' at ' + JSON.stringify(th.getBoundingClientRect()) + '; ';
			}
		} else {
			for (const tr of [...wrap.querySelectorAll('tbody tr')].slice(0, 8)) {
				for (const n of needed) {
					const td = [...tr.cells].find((c) => c.dataset.label === n);
					if (!td) { out.Problems += n + ': no field on a card; '; continue; }
					out.Checked++;
					const r = td.getBoundingClientRect();
					if (!inside(r) || getComputedStyle(td).display === 'none' || td.scrollWidth > td.clientWidth + 1) out.Problems += n + ' of a card at ' + JSON.stringify(r) + '; ';
				}
			}
		}
		return out;
	})()`, scope, jsList(needed)), &got)
	if wantTable && got.View != "table" {
		p.errorf("%s shows %q, want a table at %d px", scope, got.View, got.Inner)
	}
	if got.Inner < 600 && got.View != "cards" {
		p.errorf("%s shows %q on a %d px phone, want cards", scope, got.View, got.Inner)
	}
	if got.Scroll > got.Client+1 || got.DocScroll > got.Inner || got.Problems != "" || got.Checked == 0 {
		p.errorf("%s (%s) does not fit: scroll %d in %d, page %d in %d; %s (%d checked)", scope, got.View, got.Scroll, got.Client, got.DocScroll, got.Inner, got.Problems, got.Checked)
	}
}

// docShot writes the page's screenshot under name into $GARDEND_DOC_SCREENSHOTS (the
// tour's pictures, docs/webapp.md); without it, nothing.
func docShot(p *page, name string) {
	p.t.Helper()
	dir := os.Getenv("GARDEND_DOC_SCREENSHOTS")
	if dir == "" {
		return
	}
	time.Sleep(150 * time.Millisecond) // let the last frame paint; only for the pictures
	png, err := chromedp.Run(p.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

func jsList(s []string) string {
	var b strings.Builder
	b.WriteString("[")
	for i, x := range s {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(jsString(x))
	}
	b.WriteString("]")
	return b.String()
}

// testJPEG is a photo as a phone sends it.
func testJPEG(t testing.TB, w, h int) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(40 + x%200), uint8(120 + y%100), 60, 255})
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 85}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "leaf.jpg")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

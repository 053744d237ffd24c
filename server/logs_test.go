package server_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/store"
)

// logbookFarm is a company with a garden, a second garden elsewhere, and users of
// every kind: the company's admin (owner), a garden admin, a garden reader, a
// company reader, someone without a role, and a site admin.
type logbookFarm struct {
	ts                                       *testServer
	owner, gadmin, reader, creader, stranger string
	site                                     string
	company                                  store.Company
	garden, other                            store.Garden
	path                                     string
	bed, foreignBed                          store.Bed
}

func newLogbookFarm(t *testing.T, b backend, configure ...func(*server.Config)) *logbookFarm {
	t.Helper()
	clock := &fakeClock{t: time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)}
	ts := newTestServerOn(t, b, append([]func(*server.Config){func(c *server.Config) { c.Now = clock.Now }}, configure...)...)
	f := &logbookFarm{ts: ts}
	f.owner, f.gadmin, f.reader = ts.register("owner"), ts.register("gadmin"), ts.register("reader")
	f.creader, f.stranger = ts.register("creader"), ts.register("stranger")
	f.site = ts.siteAdmin("root")
	f.company = ts.createCompany(f.owner, "Farm")
	f.garden = ts.createGarden(f.owner, f.company.ID, "North")
	f.path = gardenPath(f.company.ID, f.garden.ID)
	ts.grant(f.owner, f.company.ID, f.garden.ID, "gadmin", store.LevelAdmin)
	ts.grant(f.owner, f.company.ID, f.garden.ID, "reader", store.LevelUser)
	ts.grant(f.owner, f.company.ID, 0, "creader", store.LevelUser)
	other := ts.createCompany(f.stranger, "Other")
	f.other = ts.createGarden(f.stranger, other.ID, "South")
	ts.must(http.StatusCreated, "POST", f.path+"/beds", f.owner, map[string]string{"uuid": "3fa85f64-5717-4562-b3fc-2c963f66afa6", "name": "Bed 6"}).decode(t, &f.bed)
	ts.must(http.StatusCreated, "POST", gardenPath(other.ID, f.other.ID)+"/beds", f.stranger, map[string]string{"uuid": "7c9e6679-7425-40de-944b-e07fc1f90ae7"}).decode(t, &f.foreignBed)
	if _, err := ts.store().KeepPlantIDs(f.bed.UUID, []store.PlantID{{Name: "p1", ID: "m-1"}}); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *logbookFarm) create(token string, body any) store.Log {
	f.ts.tb.Helper()
	var l store.Log
	f.ts.must(http.StatusCreated, "POST", f.path+"/logs", token, body).decode(f.ts.tb, &l)
	return l
}

func (f *logbookFarm) logPath(id uint64) string { return f.path + "/logs/" + u64(id) }

// TestLogRoles: who may do what with logs, as the issue states it, on both stores.
func TestLogRoles(t *testing.T) {
	bothBackends(t, func(t *testing.T, b backend) {
		f := newLogbookFarm(t, b)
		ts := f.ts
		obs := f.create(f.reader, map[string]any{"type": "observation", "title": "Aphids", "bed": f.bed.ID, "plant": "m-1"})
		if obs.Author != "reader" || obs.Status != store.LogDone || obs.Company != f.company.ID || obs.Garden != f.garden.ID || len(obs.Photos) != 0 {
			t.Fatalf("observation %+v", obs)
		}
		f.create(f.creader, map[string]any{"type": "harvest", "title": "Chard", "quantity": map[string]any{"value": 2, "unit": "kg"}})
		f.create(f.gadmin, map[string]any{"type": "activity", "title": "Watered"})

		// Tasks are the admins'.
		res := ts.do("POST", f.path+"/logs", f.reader, map[string]any{"type": "task", "title": "Weed"})
		wantProblem(t, res, http.StatusForbidden, "only admins of the garden may create tasks")
		task := f.create(f.gadmin, map[string]any{"type": "task", "title": "Tie up", "assignee": "reader", "at": "2026-05-03T07:00:00Z"})
		if task.Status != store.LogPending || task.Assignee == nil || *task.Assignee != "reader" {
			t.Fatalf("task %+v", task)
		}
		f.create(f.owner, map[string]any{"type": "task", "title": "Harvest", "assignee": "creader", "at": "2026-05-02"})

		// Others see nothing: 404, as for the garden.
		for _, c := range []struct{ method, path string }{{"GET", f.path + "/logs"}, {"POST", f.path + "/logs"},
			{"GET", f.logPath(obs.ID)}, {"PUT", f.logPath(obs.ID)}, {"DELETE", f.logPath(obs.ID)}} {
			res := ts.do(c.method, c.path, f.stranger, map[string]any{"type": "observation", "title": "x"})
			if c.method == "GET" || c.method == "DELETE" {
				res = ts.do(c.method, c.path, f.stranger, nil)
			}
			wantProblem(t, res, http.StatusNotFound, "not found")
		}
		// Everyone with a role reads.
		for _, tok := range []string{f.reader, f.creader, f.gadmin, f.owner, f.site} {
			var page struct {
				Logs []store.Log `json:"logs"`
				Next *string     `json:"next"`
			}
			ts.must(http.StatusOK, "GET", f.path+"/logs", tok, nil).decode(t, &page)
			if len(page.Logs) != 5 || page.Next != nil {
				t.Fatalf("%d logs, next %v", len(page.Logs), page.Next)
			}
			ts.must(http.StatusOK, "GET", f.logPath(obs.ID), tok, nil)
		}

		// Authors edit their own; other readers may not.
		var up store.Log
		ts.must(http.StatusOK, "PUT", f.logPath(obs.ID), f.reader, map[string]any{"notes": "on the kohlrabi"}).decode(t, &up)
		if up.Notes != "on the kohlrabi" || up.Title != "Aphids" || *up.Plant != "m-1" {
			t.Fatalf("updated %+v", up)
		}
		wantProblem(t, ts.do("PUT", f.logPath(obs.ID), f.creader, map[string]any{"notes": "x"}), http.StatusForbidden, "only the log's author or an admin")
		wantProblem(t, ts.do("PUT", f.logPath(obs.ID), f.reader, map[string]any{"type": "task"}), http.StatusForbidden, "may make a log a task")
		ts.must(http.StatusOK, "PUT", f.logPath(obs.ID), f.gadmin, map[string]any{"title": "Aphids (many)"})

		// The assignee sets the status, and nothing else.
		wantProblem(t, ts.do("PUT", f.logPath(task.ID), f.reader, map[string]any{"title": "Tie up now"}), http.StatusForbidden, "change only its status")
		wantProblem(t, ts.do("PUT", f.logPath(task.ID), f.creader, map[string]any{"status": "done"}), http.StatusForbidden, "only the log's author or an admin")
		ts.must(http.StatusOK, "PUT", f.logPath(task.ID), f.reader, map[string]any{"status": "done", "title": "Tie up"}).decode(t, &up)
		if up.Status != store.LogDone {
			t.Fatalf("status %q", up.Status)
		}

		// An author who is no admin any more may still edit their task, not assign it.
		own := f.create(f.gadmin, map[string]any{"type": "task", "title": "Prune", "assignee": "gadmin"})
		ts.grant(f.owner, f.company.ID, f.garden.ID, "gadmin", store.LevelUser)
		wantProblem(t, ts.do("PUT", f.logPath(own.ID), f.gadmin, map[string]any{"assignee": "reader"}), http.StatusForbidden, "only admins of the garden may assign tasks")
		ts.must(http.StatusOK, "PUT", f.logPath(own.ID), f.gadmin, map[string]any{"title": "Prune the roses"})

		// Deleting: the author and admins.
		wantProblem(t, ts.do("DELETE", f.logPath(obs.ID), f.creader, nil), http.StatusForbidden, "may delete it")
		ts.must(http.StatusOK, "DELETE", f.logPath(obs.ID), f.reader, nil)
		ts.must(http.StatusNotFound, "GET", f.logPath(obs.ID), f.reader, nil)
		ts.must(http.StatusOK, "DELETE", f.logPath(own.ID), f.owner, nil)

		// A log of another garden is not found through this one.
		var elsewhere store.Log
		ts.must(http.StatusCreated, "POST", gardenPath(f.other.Company, f.other.ID)+"/logs", f.stranger, map[string]any{"type": "observation", "title": "x"}).decode(t, &elsewhere)
		ts.must(http.StatusNotFound, "GET", f.logPath(elsewhere.ID), f.owner, nil)
		ts.must(http.StatusNotFound, "PUT", f.logPath(elsewhere.ID), f.owner, map[string]any{"title": "y"})

		// My tasks: pending, assigned to me, in gardens I can read, soonest first.
		var mine struct{ Tasks []store.Log }
		ts.must(http.StatusOK, "GET", "/tasks", f.creader, nil).decode(t, &mine)
		if len(mine.Tasks) != 1 || mine.Tasks[0].Title != "Harvest" || mine.Tasks[0].Company != f.company.ID || mine.Tasks[0].Garden != f.garden.ID {
			t.Fatalf("creader's tasks %+v", mine)
		}
		ts.must(http.StatusOK, "GET", "/tasks", f.reader, nil).decode(t, &mine)
		if len(mine.Tasks) != 0 {
			t.Fatalf("reader's tasks (theirs is done) %+v", mine)
		}
		// Losing the role hides the task from /tasks (it stays in the logbook).
		ts.must(http.StatusOK, "POST", companyPath(f.company.ID)+"/removePermission", f.owner, map[string]string{"username": "creader"})
		ts.must(http.StatusOK, "GET", "/tasks", f.creader, nil).decode(t, &mine)
		if len(mine.Tasks) != 0 {
			t.Fatalf("tasks without a role %+v", mine)
		}
	})
}

// wantProblem checks a refusal's status and that its detail says what to.
func wantProblem(t *testing.T, res response, status int, says string) map[string]string {
	t.Helper()
	if res.code != status {
		t.Fatalf("status %d, want %d: %s", res.code, status, res.body)
	}
	detail, fields := res.problem(t)
	if !strings.Contains(detail, says) {
		t.Fatalf("detail %q does not say %q", detail, says)
	}
	return fields
}

// TestLogBadInput: every bad input is a 400 naming its field, each rule with a
// message of its own.
func TestLogBadInput(t *testing.T) {
	f := newLogbookFarm(t, boltBackend)
	messages := map[string]string{}
	for _, c := range []struct {
		name, body, field string
	}{
		{"unknown type", `{"type":"input","title":"x"}`, "type"},
		{"no type", `{"title":"x"}`, "type"},
		{"type not a string", `{"type":3,"title":"x"}`, "type"},
		{"no title", `{"type":"observation"}`, "title"},
		{"blank title", `{"type":"observation","title":"   "}`, "title"},
		{"long title", `{"type":"observation","title":"` + strings.Repeat("a", 201) + `"}`, "title"},
		{"invisible title", `{"type":"observation","title":"\u200b\u00a0\u2066\u3164"}`, "title"},
		{"title of two lines", `{"type":"observation","title":"Aphids\u2028on the chard"}`, "title"},
		{"invisible unit", `{"type":"harvest","title":"x","quantity":{"value":1,"unit":"\ufeff"}}`, "quantity.unit"},
		{"unit of two lines", `{"type":"harvest","title":"x","quantity":{"value":1,"unit":"k\u2029g"}}`, "quantity.unit"},
		{"long notes", `{"type":"observation","title":"x","notes":"` + strings.Repeat("n", 20001) + `"}`, "notes"},
		{"plant without bed", `{"type":"observation","title":"x","plant":"m-1"}`, "plant"},
		{"bed of another garden", fmt.Sprintf(`{"type":"observation","title":"x","bed":%d}`, f.foreignBed.ID), "bed"},
		{"bed as text", `{"type":"observation","title":"x","bed":"1"}`, "bed"},
		{"plant not of the bed", fmt.Sprintf(`{"type":"observation","title":"x","bed":%d,"plant":"m-2"}`, f.bed.ID), "plant"},
		{"quantity without value", `{"type":"harvest","title":"x","quantity":{"unit":"kg"}}`, "quantity.value"},
		{"quantity without unit", `{"type":"harvest","title":"x","quantity":{"value":1}}`, "quantity.unit"},
		{"long unit", `{"type":"harvest","title":"x","quantity":{"value":1,"unit":"kilograms-of-it!!"}}`, "quantity.unit"},
		{"quantity not an object", `{"type":"harvest","title":"x","quantity":5}`, "quantity"},
		{"harvest without quantity", `{"type":"harvest","title":"x"}`, "quantity"},
		{"harvest next year", `{"type":"activity","title":"x","at":"2027-06-01T00:00:00Z"}`, "at"},
		{"at not a time", `{"type":"activity","title":"x","at":"yesterday"}`, "at"},
		{"assignee of an observation", `{"type":"observation","title":"x","assignee":"reader"}`, "assignee"},
		{"assignee without role", `{"type":"task","title":"x","assignee":"stranger"}`, "assignee"},
		{"bad status", `{"type":"observation","title":"x","status":"open"}`, "status"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := f.ts.do("POST", f.path+"/logs", f.owner, c.body)
			fields := wantProblem(t, res, http.StatusBadRequest, "")
			msg := fields[c.field]
			if msg == "" || len(fields) != 1 {
				t.Fatalf("fields %v, want only %s", fields, c.field)
			}
			if other, dup := messages[msg]; dup && c.field != "type" && c.field != "title" && c.field != "quantity" {
				t.Fatalf("%q says what %q says: %q", c.name, other, msg)
			}
			messages[msg] = c.name
		})
	}
	// Not JSON, not an object, two objects.
	wantProblem(t, f.ts.do("POST", f.path+"/logs", f.owner, `[1]`), http.StatusBadRequest, "JSON object")
	wantProblem(t, f.ts.do("POST", f.path+"/logs", f.owner, `{"type":"observation","title":"x"} {}`), http.StatusBadRequest, "single JSON object")
	wantProblem(t, f.ts.do("POST", f.path+"/logs", f.owner, `{"type":"observation","title":"x"} x`), http.StatusBadRequest, "single JSON object")
	// A PUT may not clear what a log must have.
	l := f.create(f.owner, map[string]any{"type": "observation", "title": "x"})
	fields := wantProblem(t, f.ts.do("PUT", f.logPath(l.ID), f.owner, `{"title":null,"at":null}`), http.StatusBadRequest, "cannot be cleared")
	if fields["title"] == "" || fields["at"] == "" {
		t.Fatalf("fields %v", fields)
	}
	// Listing parameters.
	for _, c := range []struct{ query, field string }{
		{"type=input", "type"}, {"status=open", "status"}, {"bed=x", "bed"}, {"plant=a/b", "plant"},
		{"from=yesterday", "from"}, {"to=2026-13-01", "to"}, {"from=2026-05-02&to=2026-05-01", "to"},
		{"q=!!!", "q"}, {"q=" + url.QueryEscape("a b c d e f g h i"), "q"}, {"limit=0", "limit"}, {"limit=201", "limit"},
		{"cursor=abc", "cursor"}, {"assignee=", "assignee"},
	} {
		fields := wantProblem(t, f.ts.do("GET", f.path+"/logs?"+c.query, f.owner, nil), http.StatusBadRequest, "")
		if fields[c.field] == "" {
			t.Errorf("%s: fields %v", c.query, fields)
		}
	}
}

// TestLogListing: filters and pages through the API, on both stores.
func TestLogListing(t *testing.T) {
	bothBackends(t, func(t *testing.T, b backend) {
		f := newLogbookFarm(t, b)
		day := func(d int) string { return time.Date(2026, 4, d, 9, 0, 0, 0, time.UTC).Format(time.RFC3339) }
		for i := range 12 {
			body := map[string]any{"type": "observation", "title": fmt.Sprintf("Check %d", i), "at": day(1 + i)}
			if i%3 == 0 {
				body["notes"], body["bed"] = "Aphids on the Tomatoes", f.bed.ID
			}
			if i%4 == 0 {
				body["type"], body["quantity"] = "harvest", map[string]any{"value": i, "unit": "kg"}
			}
			f.create([]string{f.reader, f.owner}[i%2], body)
		}
		list := func(query string) ([]store.Log, *string) {
			var page struct {
				Logs []store.Log `json:"logs"`
				Next *string     `json:"next"`
			}
			f.ts.must(http.StatusOK, "GET", f.path+"/logs?"+query, f.owner, nil).decode(t, &page)
			return page.Logs, page.Next
		}
		titles := func(ls []store.Log) string {
			var out []string
			for _, l := range ls {
				out = append(out, strings.TrimPrefix(l.Title, "Check "))
			}
			return strings.Join(out, " ")
		}
		for _, c := range []struct{ query, want string }{
			{"", "11 10 9 8 7 6 5 4 3 2 1 0"},
			{"q=tomatoes", "9 6 3 0"},
			{"q=TOMATOES+aphids", "9 6 3 0"},
			{"q=tomato", ""},
			{"type=harvest", "8 4 0"},
			{"type=harvest&q=aphids", "0"},
			{"bed=" + u64(f.bed.ID), "9 6 3 0"},
			{"author=reader", "10 8 6 4 2 0"},
			{"author=nobody", ""},
			{"from=2026-04-05&to=2026-04-07", "6 5 4"},
			{"to=" + url.QueryEscape(day(3)), "2 1 0"},
		} {
			if got, _ := list(c.query); titles(got) != c.want {
				t.Errorf("%q: %q, want %q", c.query, titles(got), c.want)
			}
		}
		var walked []string
		query := "limit=5"
		for {
			logs, next := list(query)
			walked = append(walked, titles(logs))
			if next == nil {
				break
			}
			query = "limit=5&cursor=" + url.QueryEscape(*next)
		}
		if got := strings.Join(walked, "|"); got != "11 10 9 8 7|6 5 4 3 2|1 0" {
			t.Fatalf("pages %s", got)
		}
	})
}

// TestLogOfRemovedBed: a log keeps its bed when the bed goes, shown as removed;
// deleting the garden deletes its logs.
func TestLogOfRemovedBed(t *testing.T) {
	bothBackends(t, func(t *testing.T, b backend) {
		f := newLogbookFarm(t, b)
		l := f.create(f.reader, map[string]any{"type": "observation", "title": "x", "bed": f.bed.ID, "plant": "m-1"})
		f.ts.must(http.StatusOK, "DELETE", f.path+"/beds/"+u64(f.bed.ID), f.owner, nil)
		var got store.Log
		f.ts.must(http.StatusOK, "GET", f.logPath(l.ID), f.reader, nil).decode(t, &got)
		if !got.BedRemoved || got.Bed == nil || *got.Bed != f.bed.ID {
			t.Fatalf("log of a removed bed %+v", got)
		}
		var page struct{ Logs []store.Log }
		f.ts.must(http.StatusOK, "GET", f.path+"/logs?bed="+u64(f.bed.ID), f.reader, nil).decode(t, &page)
		if len(page.Logs) != 1 {
			t.Fatalf("by removed bed: %+v", page)
		}
		f.ts.must(http.StatusOK, "DELETE", f.path, f.owner, nil)
		g2 := f.ts.createGarden(f.owner, f.company.ID, "New")
		f.ts.must(http.StatusNotFound, "GET", f.logPath(l.ID), f.owner, nil)
		var fresh struct{ Logs []store.Log }
		f.ts.must(http.StatusOK, "GET", gardenPath(f.company.ID, g2.ID)+"/logs", f.owner, nil).decode(t, &fresh)
		if len(fresh.Logs) != 0 {
			t.Fatalf("new garden's logs %+v", fresh)
		}
	})
}

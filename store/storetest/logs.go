package storetest

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/store"
)

// The logbook's contract: logs, their listing, tasks, photos' records and plant
// identities.

// logbook is a garden with two beds (one of another garden too), users of every
// role, and kept plant identities for the first bed's project.
type logbook struct {
	st                   store.Backend
	clock                *Clock
	owner, reader, other store.User
	company              store.Company
	garden, elsewhere    store.Garden
	bed, bed2, foreign   store.Bed
}

func newLogbook(t *testing.T, h Harness) *logbook {
	t.Helper()
	st, clock := open(t, h)
	lb := &logbook{st: st, clock: clock}
	lb.owner = mustUser(t, st, "owner")
	lb.reader = mustUser(t, st, "reader")
	lb.other = mustUser(t, st, "other")
	lb.company = mustCompany(t, st, lb.owner, "Farm")
	lb.garden = mustGarden(t, st, lb.company, "North")
	lb.elsewhere = mustGarden(t, st, mustCompany(t, st, lb.other, "Other farm"), "South")
	if _, err := st.SetGardenPermission(lb.garden.ID, lb.owner.ID, "reader", store.LevelUser); err != nil {
		t.Fatal(err)
	}
	var err error
	if lb.bed, err = st.CreateBed(lb.garden.ID, uuidA, "Bed 6"); err != nil {
		t.Fatal(err)
	}
	if lb.bed2, err = st.CreateBed(lb.garden.ID, uuidB, ""); err != nil {
		t.Fatal(err)
	}
	if lb.foreign, err = st.CreateBed(lb.elsewhere.ID, uuidB, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := st.KeepPlantIDs(uuidA, []store.PlantID{{Name: "p1", ID: "m-1"}, {Name: "p2", ID: "m-2"}}); err != nil {
		t.Fatal(err)
	}
	return lb
}

func (lb *logbook) create(tb testing.TB, author store.User, p store.LogPatch) store.Log {
	tb.Helper()
	l, err := lb.st.CreateLog(lb.garden.ID, author.ID, p, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

// logJSON is a log as the API shows it, with the ids it hides.
func logJSON(l store.Log) string {
	data, err := json.Marshal(l)
	if err != nil {
		panic(err)
	}
	return fmt.Sprintf("%s author %d assignee %d", data, l.AuthorID, l.AssigneeID)
}

func patch(typ store.LogType, title string) store.LogPatch {
	return store.LogPatch{Type: &typ, Title: &title}
}

// wantField fails unless err is a ValidationError naming field with a message
// containing want.
func wantField(tb testing.TB, err error, field, want string) {
	tb.Helper()
	var v *store.ValidationError
	if !errors.As(err, &v) {
		tb.Fatalf("error %v, want a validation error of %s", err, field)
	}
	if msg := v.Fields[field]; !strings.Contains(msg, want) {
		tb.Fatalf("fields %v, want %s: …%s…", v.Fields, field, want)
	}
}

func testLogsCreate(t *testing.T, h Harness) {
	lb := newLogbook(t, h)
	now := lb.clock.Now()
	q := &store.Quantity{Value: 2.5, Unit: " kg "}
	p := patch(store.LogHarvest, "  Tomatoes  ")
	p.Bed, p.Plant, p.Quantity = ptr(lb.bed.ID), ptr("m-1"), &q
	l := lb.create(t, lb.reader, p)
	want := store.Log{ID: l.ID, Company: lb.company.ID, Garden: lb.garden.ID, Type: store.LogHarvest, Title: "Tomatoes",
		At: now, Bed: ptr(lb.bed.ID), Plant: ptr("m-1"), Quantity: &store.Quantity{Value: 2.5, Unit: "kg"},
		Status: store.LogDone, Author: "reader", AuthorID: lb.reader.ID, Created: now, Updated: now, Photos: []uint64{}}
	if logJSON(l) != logJSON(want) {
		t.Fatalf("created %+v\nwant    %+v", l, want)
	}
	if l.ID == 0 || l.ID >= 1<<40 {
		t.Fatalf("id %d", l.ID)
	}
	got, err := lb.st.Log(lb.garden.ID, l.ID)
	if err != nil || logJSON(got) != logJSON(l) {
		t.Fatalf("read back %+v, %v", got, err)
	}
	if _, err := lb.st.Log(lb.elsewhere.ID, l.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("log of another garden: %v", err)
	}

	// A task defaults to pending and may be due years ahead.
	task := patch(store.LogTask, "Cut back")
	task.At, task.Assignee = ptr(now.Add(3*365*24*time.Hour)), ptr("reader")
	tl := lb.create(t, lb.owner, task)
	if tl.Status != store.LogPending || *tl.Assignee != "reader" || tl.AssigneeID != lb.reader.ID {
		t.Fatalf("task %+v", tl)
	}
	// The company's admin, a garden member and a site admin all have a role.
	site, err := lb.st.CreateUser(store.NewUser{Username: "root", FirstName: "R", LastName: "R", PasswordHash: "h", SiteAdmin: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, who := range []string{"owner", "root"} {
		task.Assignee = ptr(who)
		if _, err := lb.st.CreateLog(lb.garden.ID, lb.owner.ID, task, nil); err != nil {
			t.Fatalf("assign to %s: %v", who, err)
		}
	}
	_ = site

	for _, c := range []struct {
		name, field, want string
		p                 func(p *store.LogPatch)
	}{
		{"no type", "type", "type is required", func(p *store.LogPatch) { p.Type = nil }},
		{"unknown type", "type", `"input" is not a log type`, func(p *store.LogPatch) { p.Type = ptr(store.LogType("input")) }},
		{"blank title", "title", "must not be blank", func(p *store.LogPatch) { p.Title = ptr(" \t ") }},
		{"long title", "title", "at most 200", func(p *store.LogPatch) { p.Title = ptr(strings.Repeat("é", 201)) }},
		{"title with newline", "title", "one line", func(p *store.LogPatch) { p.Title = ptr("a\nb") }},
		{"long notes", "notes", "at most 20000", func(p *store.LogPatch) { p.Notes = ptr(strings.Repeat("x", 20001)) }},
		{"plant without bed", "plant", "plant needs bed", func(p *store.LogPatch) { p.Bed = nil }},
		{"bed of another garden", "bed", fmt.Sprintf("bed %d is not a bed of garden %d", lb.foreign.ID, lb.garden.ID), func(p *store.LogPatch) { p.Bed = ptr(lb.foreign.ID); p.Plant = nil }},
		{"no such bed", "bed", "is not a bed of garden", func(p *store.LogPatch) { p.Bed = ptr(uint64(9999)); p.Plant = nil }},
		{"plant not of the bed", "plant", "is not a plant of bed", func(p *store.LogPatch) { p.Bed = ptr(lb.bed2.ID) }},
		{"unknown plant", "plant", "is not a plant of bed", func(p *store.LogPatch) { p.Plant = ptr("m-9") }},
		{"malformed plant", "plant", "plant must be a plant id", func(p *store.LogPatch) { p.Plant = ptr("a/b") }},
		{"harvest without quantity", "quantity", "required for a harvest", func(p *store.LogPatch) { p.Quantity = ptr[*store.Quantity](nil) }},
		{"quantity without unit", "quantity.unit", "quantity.unit is required", func(p *store.LogPatch) { p.Quantity = ptr(&store.Quantity{Value: 1}) }},
		{"long unit", "quantity.unit", "1 to 16", func(p *store.LogPatch) { p.Quantity = ptr(&store.Quantity{Value: 1, Unit: strings.Repeat("k", 17)}) }},
		{"negative quantity", "quantity.value", "from 0", func(p *store.LogPatch) { p.Quantity = ptr(&store.Quantity{Value: -1, Unit: "kg"}) }},
		{"harvest next year", "at", "more than a year ahead", func(p *store.LogPatch) { p.At = ptr(now.Add(400 * 24 * time.Hour)) }},
		{"before 1900", "at", "between 1900 and 2199", func(p *store.LogPatch) { p.At = ptr(time.Date(1899, 1, 1, 0, 0, 0, 0, time.UTC)) }},
		{"assignee of a harvest", "assignee", "for tasks only", func(p *store.LogPatch) { p.Assignee = ptr("owner") }},
		{"assignee without role", "assignee", `"other" has no role on garden`, func(p *store.LogPatch) { p.Type, p.Quantity, p.Assignee = ptr(store.LogTask), nil, ptr("other") }},
		{"unknown assignee", "assignee", `"nobody" has no role`, func(p *store.LogPatch) { p.Type, p.Quantity, p.Assignee = ptr(store.LogTask), nil, ptr("nobody") }},
		{"bad status", "status", `"open" is not a status`, func(p *store.LogPatch) { p.Status = ptr(store.LogStatus("open")) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := p
			c.p(&bad)
			_, err := lb.st.CreateLog(lb.garden.ID, lb.reader.ID, bad, nil)
			wantField(t, err, c.field, c.want)
		})
	}

	// The authorizer sees the log to be and can refuse it; nothing is written.
	refused := errors.New("refused")
	var seen store.Log
	_, err = lb.st.CreateLog(lb.garden.ID, lb.reader.ID, patch(store.LogTask, "x"), func(old *store.Log, next store.Log) error {
		if old != nil {
			t.Errorf("old %v for a new log", old)
		}
		seen = next
		return refused
	})
	if !errors.Is(err, refused) || seen.Type != store.LogTask || seen.Author != "reader" || seen.Company != lb.company.ID {
		t.Fatalf("authorizer: %v, saw %+v", err, seen)
	}
	page, err := lb.st.ListLogs(lb.garden.ID, store.LogFilter{Type: store.LogTask})
	if err != nil || len(page.Logs) != 3 {
		t.Fatalf("tasks after a refused one: %d, %v", len(page.Logs), err)
	}
	if _, err := lb.st.CreateLog(424242, lb.reader.ID, patch(store.LogTask, "x"), nil); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("log of a missing garden: %v", err)
	}
}

func testLogsUpdate(t *testing.T, h Harness) {
	lb := newLogbook(t, h)
	p := patch(store.LogObservation, "Aphids")
	p.Bed, p.Plant = ptr(lb.bed.ID), ptr("m-2")
	l := lb.create(t, lb.reader, p)
	lb.clock.Advance(time.Minute)

	// Nothing changed: nothing written.
	same, err := lb.st.UpdateLog(lb.garden.ID, l.ID, store.LogPatch{Title: ptr(" Aphids ")}, nil)
	if err != nil || !same.Updated.Equal(l.Updated) {
		t.Fatalf("no-op update: %+v, %v", same, err)
	}
	up, err := lb.st.UpdateLog(lb.garden.ID, l.ID, store.LogPatch{Notes: ptr("on the underside"), Status: ptr(store.LogPending)}, func(old *store.Log, next store.Log) error {
		if old == nil || old.Notes != "" || next.Notes != "on the underside" || slices.Compare(store.ChangedLogFields(*old, next), []string{"notes", "status"}) != 0 {
			return fmt.Errorf("old %+v next %+v", old, next)
		}
		return nil
	})
	if err != nil || up.Title != "Aphids" || up.Notes != "on the underside" || up.Status != store.LogPending || !up.Updated.Equal(lb.clock.Now()) || !up.Created.Equal(l.Created) {
		t.Fatalf("update: %+v, %v", up, err)
	}

	// The bed goes: the log keeps it, shown as removed, and other edits still work.
	if _, err := lb.st.DeleteBed(lb.garden.ID, lb.bed.ID); err != nil {
		t.Fatal(err)
	}
	got, err := lb.st.Log(lb.garden.ID, l.ID)
	if err != nil || !got.BedRemoved || *got.Bed != lb.bed.ID || *got.Plant != "m-2" {
		t.Fatalf("log of a removed bed: %+v, %v", got, err)
	}
	if _, err := lb.st.UpdateLog(lb.garden.ID, l.ID, store.LogPatch{Title: ptr("Aphids gone")}, nil); err != nil {
		t.Fatalf("edit a log of a removed bed: %v", err)
	}
	// Pointing it at the removed bed again is refused; clearing the bed needs the
	// plant cleared too.
	_, err = lb.st.UpdateLog(lb.garden.ID, l.ID, store.LogPatch{Bed: ptr(lb.bed.ID), Plant: ptr("")}, nil)
	wantField(t, err, "bed", "is not a bed of garden")
	_, err = lb.st.UpdateLog(lb.garden.ID, l.ID, store.LogPatch{Bed: ptr(uint64(0))}, nil)
	wantField(t, err, "plant", "plant needs bed")
	cleared, err := lb.st.UpdateLog(lb.garden.ID, l.ID, store.LogPatch{Bed: ptr(uint64(0)), Plant: ptr("")}, nil)
	if err != nil || cleared.Bed != nil || cleared.Plant != nil || cleared.BedRemoved {
		t.Fatalf("cleared: %+v, %v", cleared, err)
	}

	// Assigning and reassigning a task; the same assignee sent again keeps it.
	task := lb.create(t, lb.owner, patch(store.LogTask, "Water"))
	a, err := lb.st.UpdateLog(lb.garden.ID, task.ID, store.LogPatch{Assignee: ptr("reader")}, nil)
	if err != nil || a.AssigneeID != lb.reader.ID {
		t.Fatalf("assign: %+v, %v", a, err)
	}
	a, err = lb.st.UpdateLog(lb.garden.ID, task.ID, store.LogPatch{Assignee: ptr("reader"), Status: ptr(store.LogDone)}, nil)
	if err != nil || a.AssigneeID != lb.reader.ID || *a.Assignee != "reader" || a.Status != store.LogDone {
		t.Fatalf("same assignee: %+v, %v", a, err)
	}
	_, err = lb.st.UpdateLog(lb.garden.ID, task.ID, store.LogPatch{Type: ptr(store.LogActivity)}, nil)
	wantField(t, err, "assignee", "for tasks only")
	_, err = lb.st.UpdateLog(lb.garden.ID, task.ID, store.LogPatch{Type: ptr(store.LogHarvest), Assignee: ptr("")}, nil)
	wantField(t, err, "quantity", "required for a harvest")
	if _, err := lb.st.UpdateLog(lb.elsewhere.ID, task.ID, store.LogPatch{Title: ptr("x")}, nil); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("update through another garden: %v", err)
	}
}

func testLogsDelete(t *testing.T, h Harness) {
	lb := newLogbook(t, h)
	l := lb.create(t, lb.reader, patch(store.LogObservation, "Slugs"))
	ph := photo(1)
	p, err := lb.st.AddPhoto(lb.garden.ID, l.ID, ph, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	refused := errors.New("refused")
	if _, err := lb.st.DeleteLog(lb.garden.ID, l.ID, func(store.Log) error { return refused }); !errors.Is(err, refused) {
		t.Fatalf("refused delete: %v", err)
	}
	r, err := lb.st.DeleteLog(lb.garden.ID, l.ID, nil)
	if err != nil || slices.Compare(r.PhotoPaths, []string{p.Path, p.ThumbPath}) != 0 {
		t.Fatalf("delete: %+v, %v", r, err)
	}
	if _, err := lb.st.Log(lb.garden.ID, l.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted log: %v", err)
	}
	if n, err := lb.st.PhotoBytes(); err != nil || n != 0 {
		t.Fatalf("photo bytes after delete: %d, %v", n, err)
	}

	// Deleting the garden deletes its logs and photos; the company's, every garden's.
	l2 := lb.create(t, lb.reader, patch(store.LogObservation, "Frost"))
	if _, err := lb.st.AddPhoto(lb.garden.ID, l2.ID, photo(2), 0, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := lb.st.DeleteGarden(lb.company.ID, lb.garden.ID); err != nil {
		t.Fatal(err)
	}
	paths, err := lb.st.PhotoPaths()
	if err != nil || len(paths) != 0 {
		t.Fatalf("photo paths after the garden went: %v, %v", paths, err)
	}
	g2 := mustGarden(t, lb.st, lb.company, "West")
	if _, err := lb.st.CreateLog(g2.ID, lb.owner.ID, patch(store.LogObservation, "x"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := lb.st.DeleteCompany(lb.company.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := lb.st.ListLogs(g2.ID, store.LogFilter{}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("logs of a deleted company's garden: %v", err)
	}
}

// photo is a photo record with content paths unique to n.
func photo(n int) store.Photo {
	return store.Photo{ContentType: store.PhotoJPEG, Width: 4032, Height: 3024, Size: 1000 + int64(n),
		Path:      fmt.Sprintf("photos/%032x.jpg", 2*n),
		ThumbPath: fmt.Sprintf("photos/%032x.jpg", 2*n+1), ThumbSize: 100, Uploader: 1}
}

func testLogsList(t *testing.T, h Harness) {
	lb := newLogbook(t, h)
	base := lb.clock.Now()
	at := func(hours int) *time.Time { return ptr(base.Add(time.Duration(hours) * time.Hour)) }
	mk := func(typ store.LogType, title, notes string, hours int, edit func(p *store.LogPatch)) store.Log {
		p := patch(typ, title)
		p.Notes, p.At = ptr(notes), at(hours)
		if typ == store.LogHarvest {
			p.Quantity = ptr(&store.Quantity{Value: 1, Unit: "kg"})
		}
		if edit != nil {
			edit(&p)
		}
		return lb.create(t, lb.reader, p)
	}
	a := mk(store.LogObservation, "Aphids on TOMATOES", "", -5, nil)
	b := mk(store.LogActivity, "Watered", "the tomatoes, well", -3, func(p *store.LogPatch) { p.Bed = ptr(lb.bed.ID) })
	c := mk(store.LogHarvest, "Tomatoes", "", -3, func(p *store.LogPatch) { p.Bed, p.Plant = ptr(lb.bed.ID), ptr("m-1") })
	d := mk(store.LogTask, "Tie up tomatoes", "", 48, func(p *store.LogPatch) { p.Assignee = ptr("reader") })
	e := mk(store.LogObservation, "Mildew", "Möhren Blätter", -30, func(p *store.LogPatch) { p.Bed = ptr(lb.bed2.ID) })
	if _, err := lb.st.CreateLog(lb.elsewhere.ID, lb.other.ID, patch(store.LogObservation, "tomatoes elsewhere"), nil); err != nil {
		t.Fatal(err)
	}
	ids := func(ls []store.Log) []uint64 {
		out := make([]uint64, len(ls))
		for i, l := range ls {
			out[i] = l.ID
		}
		return out
	}
	for _, tc := range []struct {
		name string
		f    store.LogFilter
		want []store.Log
	}{
		// Newest first; of two at the same time the later id first.
		{"all", store.LogFilter{}, []store.Log{d, c, b, a, e}},
		{"type", store.LogFilter{Type: store.LogObservation}, []store.Log{a, e}},
		{"status", store.LogFilter{Status: store.LogPending}, []store.Log{d}},
		{"bed", store.LogFilter{Bed: lb.bed.ID}, []store.Log{c, b}},
		{"plant", store.LogFilter{Plant: "m-1"}, []store.Log{c}},
		{"assignee", store.LogFilter{AssigneeID: lb.reader.ID}, []store.Log{d}},
		{"author", store.LogFilter{AuthorID: lb.reader.ID}, []store.Log{d, c, b, a, e}},
		{"other author", store.LogFilter{AuthorID: lb.owner.ID}, nil},
		{"word", store.LogFilter{Words: []string{"tomatoes"}}, []store.Log{d, c, b, a}},
		{"words", store.LogFilter{Words: []string{"tomatoes", "well"}}, []store.Log{b}},
		{"word in notes, umlaut", store.LogFilter{Words: []string{"möhren"}}, []store.Log{e}},
		{"no such word", store.LogFilter{Words: []string{"tomato"}}, nil},
		{"word and type", store.LogFilter{Words: []string{"tomatoes"}, Type: store.LogActivity}, []store.Log{b}},
		{"from", store.LogFilter{From: *at(-3)}, []store.Log{d, c, b}},
		{"until", store.LogFilter{Until: *at(-3)}, []store.Log{a, e}},
		{"from until", store.LogFilter{From: *at(-30), Until: *at(-4)}, []store.Log{a, e}},
		{"bed and until", store.LogFilter{Bed: lb.bed.ID, Until: base}, []store.Log{c, b}},
		{"cursor", store.LogFilter{After: &store.LogCursor{At: c.At, ID: c.ID}}, []store.Log{b, a, e}},
		{"cursor and word", store.LogFilter{After: &store.LogCursor{At: c.At, ID: c.ID}, Words: []string{"tomatoes"}}, []store.Log{b, a}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			page, err := lb.st.ListLogs(lb.garden.ID, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := ids(page.Logs), ids(tc.want); slices.Compare(got, want) != 0 || page.Next != nil {
				t.Fatalf("got %v (next %v), want %v", got, page.Next, want)
			}
		})
	}
	// Pages of two walk the whole listing once.
	var walked []uint64
	f := store.LogFilter{Limit: 2}
	for pages := 0; ; pages++ {
		page, err := lb.st.ListLogs(lb.garden.ID, f)
		if err != nil || pages > 5 {
			t.Fatalf("page %d: %v", pages, err)
		}
		walked = append(walked, ids(page.Logs)...)
		if page.Next == nil {
			break
		}
		f.After = page.Next
	}
	if want := ids([]store.Log{d, c, b, a, e}); slices.Compare(walked, want) != 0 {
		t.Fatalf("walked %v, want %v", walked, want)
	}
	// A page that ends exactly at the last log has no next.
	page, err := lb.st.ListLogs(lb.garden.ID, store.LogFilter{Limit: 5})
	if err != nil || page.Next != nil || len(page.Logs) != 5 {
		t.Fatalf("full page: %d, next %v, %v", len(page.Logs), page.Next, err)
	}
	if _, err := lb.st.ListLogs(99999, store.LogFilter{}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("logs of a missing garden: %v", err)
	}
	// An edit moves the log in every list it is in.
	if _, err := lb.st.UpdateLog(lb.garden.ID, a.ID, store.LogPatch{Title: ptr("Aphids"), At: at(100), Type: ptr(store.LogTask)}, nil); err != nil {
		t.Fatal(err)
	}
	page, err = lb.st.ListLogs(lb.garden.ID, store.LogFilter{Words: []string{"tomatoes"}})
	if err != nil || slices.Compare(ids(page.Logs), ids([]store.Log{d, c, b})) != 0 {
		t.Fatalf("after the edit: %v, %v", ids(page.Logs), err)
	}
	page, err = lb.st.ListLogs(lb.garden.ID, store.LogFilter{Type: store.LogTask, Limit: 1})
	if err != nil || len(page.Logs) != 1 || page.Logs[0].ID != a.ID || page.Next == nil {
		t.Fatalf("edited task first: %+v, %v", page, err)
	}
}

// testLogsListMatchesModel lists random logs with random filters and cursors and
// compares every page with the same selection done by hand.
func testLogsListMatchesModel(t *testing.T, h Harness) {
	lb := newLogbook(t, h)
	r := rand.New(rand.NewPCG(17, 1))
	words := []string{"tomato", "lettuce", "water", "aphid", "mildew", "kohlrabi"}
	users := []store.User{lb.owner, lb.reader}
	base := lb.clock.Now()
	var all []store.Log
	for range 120 {
		typ := store.LogTypes[r.IntN(len(store.LogTypes))]
		p := patch(typ, words[r.IntN(len(words))]+" "+words[r.IntN(len(words))])
		// Few distinct times, so that ties are common.
		p.At = ptr(base.Add(-time.Duration(r.IntN(20)) * time.Hour))
		if r.IntN(2) == 0 {
			p.Bed = ptr(lb.bed.ID)
			if r.IntN(2) == 0 {
				p.Plant = ptr([]string{"m-1", "m-2"}[r.IntN(2)])
			}
		}
		if typ == store.LogHarvest {
			p.Quantity = ptr(&store.Quantity{Value: 1, Unit: "kg"})
		}
		if typ == store.LogTask && r.IntN(2) == 0 {
			p.Assignee = ptr("reader")
		}
		if r.IntN(3) == 0 {
			p.Status = ptr(store.LogPending)
		}
		all = append(all, lb.create(t, users[r.IntN(2)], p))
	}
	slices.SortFunc(all, func(a, b store.Log) int { return cmp.Or(b.At.Compare(a.At), cmp.Compare(b.ID, a.ID)) })
	for i := range 60 {
		var f store.LogFilter
		if r.IntN(3) == 0 {
			f.Type = store.LogTypes[r.IntN(len(store.LogTypes))]
		}
		if r.IntN(4) == 0 {
			f.Status = store.LogPending
		}
		if r.IntN(3) == 0 {
			f.Bed = lb.bed.ID
		}
		if r.IntN(5) == 0 {
			f.Plant = "m-1"
		}
		if r.IntN(5) == 0 {
			f.AssigneeID = lb.reader.ID
		}
		if r.IntN(4) == 0 {
			f.AuthorID = users[r.IntN(2)].ID
		}
		if r.IntN(3) == 0 {
			f.Words = []string{words[r.IntN(len(words))]}
		}
		if r.IntN(4) == 0 {
			f.From = base.Add(-time.Duration(r.IntN(20)) * time.Hour)
		}
		if r.IntN(4) == 0 {
			f.Until = base.Add(-time.Duration(r.IntN(20)) * time.Hour)
		}
		f.Limit = 1 + r.IntN(12)
		var want []uint64
		for _, l := range all {
			if matches(l, f) {
				want = append(want, l.ID)
			}
		}
		var got []uint64
		for pages := 0; ; pages++ {
			page, err := lb.st.ListLogs(lb.garden.ID, f)
			if err != nil || pages > 200 {
				t.Fatalf("filter %d %+v: %v", i, f, err)
			}
			if len(page.Logs) > f.Limit || page.Next != nil && len(page.Logs) < f.Limit {
				t.Fatalf("filter %d: a page of %d with next %v, limit %d", i, len(page.Logs), page.Next, f.Limit)
			}
			for _, l := range page.Logs {
				got = append(got, l.ID)
			}
			if page.Next == nil {
				break
			}
			f.After = page.Next
		}
		if slices.Compare(got, want) != 0 {
			t.Fatalf("filter %d %+v:\ngot  %v\nwant %v", i, f, got, want)
		}
	}
}

func matches(l store.Log, f store.LogFilter) bool {
	words := store.LogWords(l.Title, l.Notes)
	for _, w := range f.Words {
		if !slices.Contains(words, w) {
			return false
		}
	}
	return (f.Type == "" || l.Type == f.Type) && (f.Status == "" || l.Status == f.Status) &&
		(f.Bed == 0 || l.Bed != nil && *l.Bed == f.Bed) && (f.Plant == "" || l.Plant != nil && *l.Plant == f.Plant) &&
		(f.AssigneeID == 0 || l.AssigneeID == f.AssigneeID) && (f.AuthorID == 0 || l.AuthorID == f.AuthorID) &&
		(f.From.IsZero() || !l.At.Before(f.From)) && (f.Until.IsZero() || l.At.Before(f.Until))
}

func testPendingTasks(t *testing.T, h Harness) {
	lb := newLogbook(t, h)
	base := lb.clock.Now()
	task := func(g store.Garden, title string, hours int, assignee string) store.Log {
		p := patch(store.LogTask, title)
		p.At = ptr(base.Add(time.Duration(hours) * time.Hour))
		if assignee != "" {
			p.Assignee = &assignee
		}
		l, err := lb.st.CreateLog(g.ID, lb.owner.ID, p, nil)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	later := task(lb.garden, "later", 48, "reader")
	soon := task(lb.garden, "soon", 2, "reader")
	overdue := task(lb.garden, "overdue", -24, "reader")
	task(lb.garden, "unassigned", 1, "")
	task(lb.garden, "owner's", 1, "owner")
	if _, err := lb.st.SetGardenPermission(lb.elsewhere.ID, lb.other.ID, "reader", store.LevelUser); err != nil {
		t.Fatal(err)
	}
	away := task(lb.elsewhere, "away", 5, "reader")
	done := task(lb.garden, "done", 3, "reader")
	if _, err := lb.st.UpdateLog(lb.garden.ID, done.ID, store.LogPatch{Status: ptr(store.LogDone)}, nil); err != nil {
		t.Fatal(err)
	}
	titles := func(ls []store.Log) []string {
		var out []string
		for _, l := range ls {
			out = append(out, l.Title)
			if l.Company == 0 || l.Garden == 0 {
				t.Errorf("task %d without company or garden: %+v", l.ID, l)
			}
		}
		return out
	}
	for _, c := range []struct {
		visible map[uint64]bool
		want    []string
	}{
		{nil, []string{"overdue", "soon", "away", "later"}},
		{map[uint64]bool{lb.garden.ID: true}, []string{"overdue", "soon", "later"}},
		{map[uint64]bool{}, nil},
	} {
		got, err := lb.st.PendingTasks(lb.reader.ID, c.visible)
		if err != nil || slices.Compare(titles(got), c.want) != 0 {
			t.Fatalf("visible %v: %v, %v; want %v", c.visible, titles(got), err, c.want)
		}
	}
	// Reassigned, moved, done: the list follows.
	if _, err := lb.st.UpdateLog(lb.garden.ID, overdue.ID, store.LogPatch{Assignee: ptr("owner")}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := lb.st.UpdateLog(lb.garden.ID, later.ID, store.LogPatch{At: ptr(base)}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := lb.st.UpdateLog(lb.elsewhere.ID, away.ID, store.LogPatch{Status: ptr(store.LogDone)}, nil); err != nil {
		t.Fatal(err)
	}
	got, err := lb.st.PendingTasks(lb.reader.ID, nil)
	if want := []string{"later", "soon"}; err != nil || slices.Compare(titles(got), want) != 0 {
		t.Fatalf("after changes: %v, %v; want %v", titles(got), err, want)
	}
	if got[1].ID != soon.ID {
		t.Fatalf("soon is %d, want %d", got[1].ID, soon.ID)
	}
}

func testLogPhotos(t *testing.T, h Harness) {
	lb := newLogbook(t, h)
	l := lb.create(t, lb.reader, patch(store.LogObservation, "Blight"))
	other := lb.create(t, lb.reader, patch(store.LogObservation, "Other"))
	p1 := photo(1)
	p1.ThumbPath, p1.ThumbSize = "", 0
	a, err := lb.st.AddPhoto(lb.garden.ID, l.ID, p1, 0, nil)
	if err != nil || a.ID == 0 || a.Log != l.ID || a.Garden != lb.garden.ID || !a.Created.Equal(lb.clock.Now()) {
		t.Fatalf("add: %+v, %v", a, err)
	}
	// Within the budget, and one byte past it.
	b, err := lb.st.AddPhoto(lb.garden.ID, l.ID, photo(2), a.Bytes()+photo(2).Bytes(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lb.st.AddPhoto(lb.garden.ID, l.ID, photo(3), a.Bytes()+b.Bytes()+photo(3).Bytes()-1, nil); !errors.Is(err, store.ErrStorageFull) {
		t.Fatalf("past the budget: %v", err)
	}
	refused := errors.New("refused")
	if _, err := lb.st.AddPhoto(lb.garden.ID, l.ID, photo(3), 0, func(store.Log) error { return refused }); !errors.Is(err, refused) {
		t.Fatalf("refused: %v", err)
	}
	if _, err := lb.st.AddPhoto(lb.elsewhere.ID, l.ID, photo(3), 0, nil); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("photo through another garden: %v", err)
	}
	bad := photo(3)
	bad.Path = "photos/../x.jpg"
	_, err = lb.st.AddPhoto(lb.garden.ID, l.ID, bad, 0, nil)
	wantField(t, err, "path", "is not photos/")
	got, err := lb.st.Log(lb.garden.ID, l.ID)
	if err != nil || slices.Compare(got.Photos, []uint64{a.ID, b.ID}) != 0 {
		t.Fatalf("log's photos: %v, %v", got.Photos, err)
	}
	if _, err := lb.st.Photo(lb.garden.ID, other.ID, a.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("photo through another log: %v", err)
	}
	if got, err := lb.st.PhotoByID(b.ID); err != nil || got != b {
		t.Fatalf("PhotoByID = %+v, %v; want %+v", got, err, b)
	}
	// A thumbnail once: a second is not recorded.
	th, err := lb.st.SetPhotoThumb(a.ID, "photos/0000000000000000000000000000000a.jpg", 77)
	if err != nil || th.ThumbPath != "photos/0000000000000000000000000000000a.jpg" || th.ThumbSize != 77 {
		t.Fatalf("thumb: %+v, %v", th, err)
	}
	th, err = lb.st.SetPhotoThumb(a.ID, "photos/0000000000000000000000000000000b.jpg", 88)
	if err != nil || th.ThumbPath != "photos/0000000000000000000000000000000a.jpg" {
		t.Fatalf("second thumb: %+v, %v", th, err)
	}
	total := a.Size + 77 + b.Bytes()
	if n, err := lb.st.PhotoBytes(); err != nil || n != total {
		t.Fatalf("photo bytes %d, %v; want %d", n, err, total)
	}
	paths, err := lb.st.PhotoPaths()
	if err != nil || len(paths) != 4 || !paths[a.Path] || !paths[th.ThumbPath] || !paths[b.ThumbPath] {
		t.Fatalf("paths %v, %v", paths, err)
	}
	if _, err := lb.st.DeletePhoto(lb.garden.ID, l.ID, a.ID, func(store.Log) error { return refused }); !errors.Is(err, refused) {
		t.Fatalf("refused delete: %v", err)
	}
	if _, err := lb.st.DeletePhoto(lb.garden.ID, other.ID, a.ID, nil); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("delete through another log: %v", err)
	}
	r, err := lb.st.DeletePhoto(lb.garden.ID, l.ID, a.ID, nil)
	if err != nil || slices.Compare(r.PhotoPaths, []string{a.Path, th.ThumbPath}) != 0 {
		t.Fatalf("delete: %+v, %v", r, err)
	}
	if n, err := lb.st.PhotoBytes(); err != nil || n != b.Bytes() {
		t.Fatalf("photo bytes after delete %d, %v", n, err)
	}
	if _, err := lb.st.PhotoByID(a.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("PhotoByID of a deleted photo: %v", err)
	}
}

func testPlantIDs(t *testing.T, h Harness) {
	nodes, _ := openNodes(t, h, 2)
	st := nodes[0]
	u := mustUser(t, st, "ann")
	g := mustGarden(t, st, mustCompany(t, st, u, "Farm"), "G")
	bed, err := st.CreateBed(g.ID, uuidA, "")
	if err != nil {
		t.Fatal(err)
	}
	keep := func(st store.Backend, seen ...store.PlantID) map[string]string {
		t.Helper()
		ids, err := st.KeepPlantIDs(uuidA, seen)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	ids := keep(st, store.PlantID{Name: "a", ID: "m1"}, store.PlantID{Name: "b", ID: "m2"})
	if ids["a"] != "m1" || ids["b"] != "m2" {
		t.Fatalf("first ids %v", ids)
	}
	// A new scan under the same names: the first ids stay, on every node; a new name
	// keeps its own.
	ids = keep(nodes[1], store.PlantID{Name: "a", ID: "m7"}, store.PlantID{Name: "b", ID: "m8"}, store.PlantID{Name: "c", ID: "m9"})
	if ids["a"] != "m1" || ids["b"] != "m2" || ids["c"] != "m9" {
		t.Fatalf("after a new scan %v", ids)
	}
	// A renamed geometry brings an id another name has: it gets a derived one, the
	// same every time.
	ids = keep(st, store.PlantID{Name: "d", ID: "m1"})
	if !strings.HasPrefix(ids["d"], "m1-") || !store.ValidUUID(ids["d"]) {
		t.Fatalf("renamed %v", ids)
	}
	if again := keep(nodes[1], store.PlantID{Name: "d", ID: "m5"}); again["d"] != ids["d"] {
		t.Fatalf("renamed again %v, want %v", again, ids)
	}
	// A name that cannot be kept gets its id as it came.
	if odd := keep(st, store.PlantID{Name: "x\x00y", ID: "m3"}); odd["x\x00y"] != "m3" {
		t.Fatalf("unkeepable %v", odd)
	}
	// Logs may name kept ids only.
	l, err := st.CreateLog(g.ID, u.ID, store.LogPatch{Type: ptr(store.LogObservation), Title: ptr("x"), Bed: ptr(bed.ID), Plant: ptr("m9")}, nil)
	if err != nil || *l.Plant != "m9" {
		t.Fatalf("log of a kept plant: %v", err)
	}
	// The project's last bed goes: so do its identities; a project no bed refers to
	// keeps none.
	if _, err := st.DeleteBed(g.ID, bed.ID); err != nil {
		t.Fatal(err)
	}
	if fresh := keep(st, store.PlantID{Name: "a", ID: "m7"}); fresh["a"] != "m7" {
		t.Fatalf("without a bed %v", fresh)
	}
	if _, err := st.CreateBed(g.ID, uuidA, ""); err != nil {
		t.Fatal(err)
	}
	if fresh := keep(st, store.PlantID{Name: "a", ID: "m7"}); fresh["a"] != "m7" {
		t.Fatalf("bed registered again %v", fresh)
	}
	if kept := keep(st, store.PlantID{Name: "a", ID: "m1"}); kept["a"] != "m7" {
		t.Fatalf("kept after the bed came back %v", kept)
	}
}

// testLogsTextBudget: a page of logs ends early, with its cursor, once its titles and
// notes reach MaxLogPageText, and the pages together still give every log once; the
// pending tasks answer stops there too. (200 logs of 20,000 four-byte characters
// were 16 MB in one page, 1000 tasks 80 MB.)
func testLogsTextBudget(t *testing.T, h Harness) {
	lb := newLogbook(t, h)
	notes := strings.Repeat("🌱", store.MaxLogNotes) // 80,000 bytes
	perPage := store.MaxLogPageText/len(notes) + 1  // the log that reaches the budget ends the page
	n := 2*perPage + 1                              // three pages, the budget ending two
	for i := range n {
		p := patch(store.LogTask, fmt.Sprintf("task %d", i))
		p.Notes = &notes
		p.At = ptr(lb.clock.Now().Add(time.Duration(i) * time.Minute))
		reader := "reader"
		p.Assignee = &reader
		lb.create(t, lb.owner, p)
	}
	var all []store.Log
	f := store.LogFilter{Limit: store.MaxLogPage}
	for pages := 0; ; pages++ {
		page, err := lb.st.ListLogs(lb.garden.ID, f)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Logs) > perPage {
			t.Fatalf("a page of %d logs of %d bytes of notes; want at most %d", len(page.Logs), len(notes), perPage)
		}
		all = append(all, page.Logs...)
		if page.Next == nil {
			break
		}
		if pages > n {
			t.Fatal("pages without end")
		}
		f.After = page.Next
	}
	if len(all) != n {
		t.Fatalf("the pages gave %d logs, want %d", len(all), n)
	}
	for i, l := range all {
		if want := fmt.Sprintf("task %d", n-1-i); l.Title != want {
			t.Fatalf("log %d of the pages is %q, want %q", i, l.Title, want)
		}
	}
	tasks, err := lb.st.PendingTasks(lb.reader.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != perPage || tasks[0].Title != "task 0" {
		t.Fatalf("PendingTasks gave %d tasks (first %q); want the %d soonest", len(tasks), tasks[0].Title, perPage)
	}
}

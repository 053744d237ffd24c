package storetest

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/store"
)

// The logbook's benchmarks, run by each backend's tests on a garden of many logs
// loaded through an archive (one transaction: a fixture of 100,000 logs takes
// seconds, not the minutes of as many CreateLog calls).

// BenchGarden is the garden a logbook fixture holds.
type BenchGarden struct {
	Garden, Bed, Author uint64
	Plant               string
	// Rare is a word in RareLogs logs; Common one in about a third of them.
	Rare, Common string
}

// RareLogs is how many logs of a fixture hold the rare word.
const RareLogs = 10

// benchWords is a garden's vocabulary; the common word comes first.
var benchWords = strings.Fields(`water tomato lettuce mangold kohlrabi aphids mildew weed harvest
	row bed leaf leaves yellow brown spots slugs snails dry wet soil compost mulch seedlings
	transplant thin prune tie stake net frost rain sun shade wind hail fertiliser manure
	nitrogen potassium irrigation drip hose sprinkler greenhouse tunnel cover fleece
	bolting flowering fruiting ripe green red purple chard beet carrot onion garlic leek
	bean pea courgette squash pumpkin cucumber pepper chilli basil parsley coriander dill`)

// WriteLogbookArchive writes an archive of one garden with n logs of a realistic mix
// (types, times over three years, beds and plants, titles and notes from a garden's
// words, a rare word in RareLogs of them) and returns what it holds.
func WriteLogbookArchive(w *bytes.Buffer, n int) (BenchGarden, error) {
	const (
		project = "3fa85f64-5717-4562-b3fc-2c963f66afa6"
		beds    = 6
		plants  = 33
	)
	g := BenchGarden{Garden: 1, Bed: 1, Author: 1, Plant: "m-0", Rare: "xylophone", Common: benchWords[0]}
	aw, err := store.NewArchiveWriter(w, store.ArchiveHeader{Exported: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		return g, err
	}
	write := func(kind string, rec any) {
		if err == nil {
			err = aw.Write(kind, rec)
		}
	}
	joined := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, name := range []string{"ann", "bob"} {
		write(store.KindUser, store.ArchivedUser{User: store.User{ID: uint64(i + 1), Username: name, FirstName: "F", LastName: "L", DateJoined: joined}, PasswordHash: "!"})
	}
	write(store.KindCompany, store.Company{ID: 1, Name: "Farm"})
	write(store.KindGarden, store.ArchivedGarden{Garden: store.Garden{ID: 1, Name: "Field", Company: 1}})
	write(store.KindCompanyPermission, store.ArchivedPermission{ID: 1, On: 1, UserID: 1, Level: store.LevelAdmin})
	write(store.KindCompanyPermission, store.ArchivedPermission{ID: 2, On: 1, UserID: 2, Level: store.LevelUser})
	for b := range beds {
		write(store.KindBed, store.ArchivedBed{Bed: store.Bed{ID: uint64(b + 1), UUID: fmt.Sprintf("%s%d", project[:35], b), Name: fmt.Sprintf("Bed %d", b+1)}, Garden: 1})
	}
	for b := range beds {
		for p := range plants {
			write(store.KindPlantID, store.PlantID{Project: fmt.Sprintf("%s%d", project[:35], b), Name: fmt.Sprintf("plant_%03d", p), ID: fmt.Sprintf("m-%d", b*plants+p)})
		}
	}
	r := rand.New(rand.NewPCG(17, 4))
	zipf := rand.NewZipf(r, 1.3, 2, uint64(len(benchWords)-2))
	word := func() string {
		if r.IntN(9) == 0 {
			return benchWords[0] // the common word, in about a third of the logs
		}
		return benchWords[1+zipf.Uint64()]
	}
	phrase := func(k int) string {
		ws := make([]string, k)
		for i := range ws {
			ws[i] = word()
		}
		return strings.Join(ws, " ")
	}
	start := joined
	for i := range n {
		l := store.ArchivedLog{ID: uint64(i + 1), Garden: 1, AuthorID: uint64(1 + r.IntN(2)), Status: store.LogDone,
			At: start.Add(time.Duration(r.Int64N(int64(3 * 365 * 24 * time.Hour)))).Truncate(time.Second)}
		switch k := r.IntN(20); {
		case k < 8:
			l.Type = store.LogObservation
		case k < 15:
			l.Type = store.LogActivity
		case k < 18:
			l.Type, l.Quantity = store.LogHarvest, &store.Quantity{Value: float64(1 + r.IntN(20)), Unit: "kg"}
		default:
			l.Type, l.Status = store.LogTask, store.LogPending
			if r.IntN(2) == 0 {
				l.AssigneeID = 2
			}
		}
		l.Title = phrase(2 + r.IntN(4))
		if r.IntN(2) == 0 {
			l.Notes = phrase(5 + r.IntN(25))
		}
		if i%(n/RareLogs) == n/RareLogs/2 {
			l.Notes += " " + g.Rare
		}
		if r.IntN(10) < 6 {
			bed := uint64(1 + r.IntN(beds))
			l.Bed = &bed
			if r.IntN(2) == 0 {
				l.Plant = new(fmt.Sprintf("m-%d", (bed-1)*plants+uint64(r.IntN(plants))))
			}
		}
		l.Created, l.Updated = l.At, l.At
		write(store.KindLog, l)
	}
	if err != nil {
		return g, err
	}
	return g, aw.Close()
}

// LoadLogbook loads a fixture of n logs into an empty store.
func LoadLogbook(tb testing.TB, st store.Backend, n int) BenchGarden {
	tb.Helper()
	var buf bytes.Buffer
	g, err := WriteLogbookArchive(&buf, n)
	if err != nil {
		tb.Fatal(err)
	}
	if err := st.Import(context.Background(), &buf, store.ImportOptions{}); err != nil {
		tb.Fatal(err)
	}
	return g
}

// BenchmarkListLogs measures a page of 50 from a garden of 100,000 logs: newest
// first, with a common and a rare word, with filters, and deep in the listing.
func BenchmarkListLogs(b *testing.B, st store.Backend) {
	const n = 100_000
	g := LoadLogbook(b, st, n)
	// A cursor halfway down the listing.
	var deep *store.LogCursor
	f := store.LogFilter{Limit: store.MaxLogPage}
	for range n / 2 / store.MaxLogPage {
		page, err := st.ListLogs(g.Garden, f)
		if err != nil {
			b.Fatal(err)
		}
		f.After, deep = page.Next, page.Next
	}
	for _, c := range []struct {
		name string
		f    store.LogFilter
		min  int
	}{
		{"newest", store.LogFilter{}, 50},
		{"q=common", store.LogFilter{Words: []string{g.Common}}, 50},
		{"q=rare", store.LogFilter{Words: []string{g.Rare}}, RareLogs},
		{"q=two_words", store.LogFilter{Words: []string{g.Common, "tomato"}}, 50},
		{"type+bed", store.LogFilter{Type: store.LogHarvest, Bed: g.Bed}, 50},
		{"plant", store.LogFilter{Plant: g.Plant}, 1},
		{"halfway", store.LogFilter{After: deep}, 50},
	} {
		b.Run(c.name, func(b *testing.B) {
			var got int
			for b.Loop() {
				page, err := st.ListLogs(g.Garden, c.f)
				if err != nil {
					b.Fatal(err)
				}
				got = len(page.Logs)
			}
			if got < c.min {
				b.Fatalf("%d logs, want at least %d", got, c.min)
			}
			b.ReportMetric(float64(got), "logs/page")
		})
	}
}

// BenchmarkCreateLog measures recording a log with a title and notes of a dozen
// words on a bed and a plant, in a garden of 10,000 logs.
func BenchmarkCreateLog(b *testing.B, st store.Backend) {
	g := LoadLogbook(b, st, 10_000)
	typ, title := store.LogObservation, "Aphids on the lettuce again"
	notes := "mostly on the undersides of the outer leaves, near the path; ladybirds seen too"
	for b.Loop() {
		if _, err := st.CreateLog(g.Garden, g.Author, store.LogPatch{Type: &typ, Title: &title, Notes: &notes,
			Bed: &g.Bed, Plant: &g.Plant}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

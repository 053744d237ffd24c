package store_test

import (
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/gardend/gardend/store"
)

func randomValues(r *rand.Rand) store.HistoryValues {
	var v store.HistoryValues
	num := func() *float64 {
		var f float64
		switch r.IntN(3) {
		case 0:
			f = math.Round(r.Float64()*1000) / 1000 // thousandths: the short form
		case 1:
			f = r.NormFloat64() * 1e6
		default:
			f = math.Round(r.NormFloat64()*1e6) / 1000
		}
		return &f
	}
	if r.IntN(4) > 0 {
		v.SoilHumidity = num()
	}
	if r.IntN(4) > 0 {
		v.Yield = num()
	}
	if r.IntN(4) > 0 {
		v.HarvestWeeks = new(r.Int64N(200) - 50)
	}
	for _, t := range []string{"water", "nutrients", "diseases", "frost", "pests"} {
		if r.IntN(3) > 0 {
			v.Health = append(v.Health, store.HealthLevel{Type: t, Level: r.Int64N(12) - 2})
		}
	}
	if r.IntN(2) == 0 {
		v.Plants = new(r.Int64N(100))
	}
	return v
}

// TestChunkRoundTrip: every point comes back as it went in, values bit for bit and
// missing ones missing, whether merged one by one in any order or encoded at once.
func TestChunkRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		day := store.HistoryDay(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)) + uint32(round)
		start := store.DayStart(day)
		n := 1 + r.IntN(40)
		byAt := map[time.Time]store.HistoryPoint{}
		var data []byte
		for range n {
			at := start.Add(time.Duration(r.Int64N(int64(24*time.Hour))) / time.Microsecond * time.Microsecond)
			if r.IntN(2) == 0 {
				at = at.Truncate(time.Second)
			}
			p := store.HistoryPoint{At: at, HistoryValues: randomValues(r)}
			byAt[at] = p
			var err error
			if data, err = store.MergeIntoChunk(day, data, p); err != nil {
				t.Fatal(err)
			}
		}
		got, err := store.DecodeChunk(day, data)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(byAt) {
			t.Fatalf("%d points back, %d in", len(got), len(byAt))
		}
		for i, p := range got {
			if i > 0 && !got[i-1].At.Before(p.At) {
				t.Fatalf("points out of order at %d", i)
			}
			if want := byAt[p.At]; !reflect.DeepEqual(p, want) {
				t.Fatalf("point %v:\n got %+v\nwant %+v", p.At, p, want)
			}
		}
		if again, _ := store.DecodeChunk(day, store.EncodeChunk(day, got)); !reflect.DeepEqual(again, got) {
			t.Fatal("encoding the decoded points changes them")
		}
	}
}

// TestChunkSize: an hourly point of three decimals and three health aspects takes
// about 16 bytes.
func TestChunkSize(t *testing.T) {
	day := store.HistoryDay(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	var pts []store.HistoryPoint
	for h := range 24 {
		pts = append(pts, store.HistoryPoint{At: store.DayStart(day).Add(time.Duration(h) * time.Hour), HistoryValues: store.HistoryValues{
			SoilHumidity: new(0.437), Yield: new(1.25), HarvestWeeks: new(int64(3)),
			Health: []store.HealthLevel{{Type: "water", Level: 1}, {Type: "nutrients", Level: 0}, {Type: "diseases", Level: 2}},
		}})
	}
	if n := len(store.EncodeChunk(day, pts)); n > 24*16 {
		t.Errorf("24 points take %d bytes", n)
	}
}

// TestTrimChunk drops the points before a time.
func TestTrimChunk(t *testing.T) {
	day := store.HistoryDay(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	var pts []store.HistoryPoint
	for h := range 4 {
		pts = append(pts, store.HistoryPoint{At: store.DayStart(day).Add(time.Duration(h) * time.Hour)})
	}
	data := store.EncodeChunk(day, pts)
	for _, tc := range []struct {
		cut  time.Duration
		left int
	}{{0, 4}, {time.Hour, 3}, {90 * time.Minute, 2}, {3 * time.Hour, 1}, {4 * time.Hour, 0}} {
		kept, n, err := store.TrimChunk(day, data, store.DayStart(day).Add(tc.cut))
		left, _ := store.ChunkLen(day, kept)
		if err != nil || n != 4-tc.left || left != tc.left || (tc.left == 0) != (kept == nil) {
			t.Errorf("cut at %v: kept %d (%v), dropped %d, %v", tc.cut, left, kept == nil, n, err)
		}
	}
}

// FuzzDecodeChunk: stored bytes that are not a chunk are an error, never a panic;
// what decodes encodes to the same points.
func FuzzDecodeChunk(f *testing.F) {
	day := store.HistoryDay(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	r := rand.New(rand.NewPCG(3, 4))
	for range 8 {
		f.Add(store.EncodeChunk(day, []store.HistoryPoint{{At: store.DayStart(day).Add(time.Hour), HistoryValues: randomValues(r)}}))
	}
	f.Add([]byte{})
	f.Add([]byte{0x02, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		pts, err := store.DecodeChunk(day, data)
		if err != nil {
			return
		}
		for i := 1; i < len(pts); i++ {
			if pts[i].At.Before(pts[i-1].At) {
				return // not one EncodeChunk makes; still decodes safely
			}
		}
		again, err := store.DecodeChunk(day, store.EncodeChunk(day, pts))
		if err != nil {
			t.Fatal(err)
		}
		if len(again) != len(pts) {
			t.Fatalf("%d points, %d again", len(pts), len(again))
		}
		for i := range pts {
			if !again[i].At.Equal(pts[i].At) || len(again[i].Health) != len(pts[i].Health) {
				t.Fatalf("point %d changed", i)
			}
		}
	})
}

// BenchmarkListTwoYears decodes two years of one series' daily chunks of hourly
// points (17,520 points), as a listing does.
func BenchmarkListTwoYears(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	first := store.HistoryDay(time.Date(2024, 11, 22, 0, 0, 0, 0, time.UTC))
	var chunks [][]byte
	for d := range uint32(730) {
		var pts []store.HistoryPoint
		for h := range 24 {
			v := store.HistoryValues{SoilHumidity: new(math.Round(r.Float64()*1000) / 1000), Yield: new(math.Round(r.Float64()*1000) / 1000),
				HarvestWeeks: new(int64(3)), Health: []store.HealthLevel{{Type: "water", Level: 1}, {Type: "nutrients", Level: 2}, {Type: "diseases", Level: 0}}}
			pts = append(pts, store.HistoryPoint{At: store.DayStart(first + d).Add(time.Duration(h) * time.Hour), HistoryValues: v})
		}
		chunks = append(chunks, store.EncodeChunk(first+d, pts))
	}
	from, until := store.DayStart(first), store.DayStart(first+730)
	for b.Loop() {
		var out []store.HistoryPoint
		var cr store.ChunkReader
		for d, c := range chunks {
			var err error
			if out, err = cr.Append(out, first+uint32(d), c, from, until); err != nil {
				b.Fatal(err)
			}
		}
		if len(out) != 730*24 {
			b.Fatal(len(out))
		}
	}
}

// TestRecordingDecodesAllocateLittle: recording a point decodes its series' newest
// values and its day's chunk; each decode allocated three full slabs (about 40 KB)
// for a few values, so filling 3.5 million points took over 19 minutes.
func TestRecordingDecodesAllocateLittle(t *testing.T) {
	h, y := 0.42, 1.5
	v := store.HistoryValues{SoilHumidity: &h, Yield: &y, HarvestWeeks: new(int64(3)),
		Health: []store.HealthLevel{{Type: "water", Level: 1}, {Type: "nutrients", Level: 2}, {Type: "diseases", Level: 0}}}
	enc := store.AppendValues(nil, v)
	day := store.HistoryDay(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
	chunk := store.EncodeChunk(day, []store.HistoryPoint{{At: store.DayStart(day).Add(time.Hour), HistoryValues: v}})
	next := store.HistoryPoint{At: store.DayStart(day).Add(2 * time.Hour), HistoryValues: v}
	perCall := func(f func()) uint64 {
		const runs = 200
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range runs {
			f()
		}
		runtime.ReadMemStats(&after)
		return (after.TotalAlloc - before.TotalAlloc) / runs
	}
	values := perCall(func() {
		if _, err := store.DecodeValues(enc); err != nil {
			t.Fatal(err)
		}
	})
	merge := perCall(func() {
		if _, err := store.MergeIntoChunk(day, chunk, next); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("DecodeValues %d B, MergeIntoChunk of a 1-point chunk %d B", values, merge)
	// A few hundred bytes each (more under the race detector); the slabs were 40 KB.
	const budget = 2048
	if values > budget || merge > budget {
		t.Errorf("DecodeValues allocates %d B, MergeIntoChunk %d B; want at most %d each", values, merge, budget)
	}
}

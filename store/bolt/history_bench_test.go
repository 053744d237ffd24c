//go:build unix

package bolt_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/gardend/gardend/store/bolt"
	"github.com/gardend/gardend/store/storetest"
)

var benchNow = time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)

func openBench(b *testing.B, dir string) *bolt.Store {
	b.Helper()
	st, err := bolt.Open(filepath.Join(dir, bolt.FileName), bolt.Options{Now: func() time.Time { return benchNow }, NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	return st
}

// BenchmarkHistoryBytesPerPoint: what a point costs on disk: 90 days of hourly
// points of one bed of 33 plants (~73,000 points), as bbolt's pages hold them (in
// use, and the pages allocated for them). The file itself grows in steps of 16 MiB
// (bbolt's AllocSize), so its size says little at this scale.
func BenchmarkHistoryBytesPerPoint(b *testing.B) {
	dir := b.TempDir()
	st := openBench(b, dir)
	// Each round adds a garden: bytes are per point of every round.
	points := 0
	for b.Loop() {
		points += storetest.FillHistory(b, st, 1, 33, 90*24*time.Hour, time.Hour, 24).Points
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	db, err := bbolt.Open(filepath.Join(dir, bolt.FileName), 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = db.Close() }() // read-only: nothing to lose
	inuse, alloc := historyBytes(db)
	b.ReportMetric(float64(inuse)/float64(points), "B/point-inuse")
	b.ReportMetric(float64(alloc)/float64(points), "B/point-alloc")
	b.ReportMetric(float64(points), "points")
}

// cpuTime is the CPU time the process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// historyBytes sums what history's buckets use of their pages, and the pages.
func historyBytes(db *bbolt.DB) (inuse, alloc int) {
	_ = db.View(func(tx *bbolt.Tx) error { // a read that cannot fail
		for _, name := range []string{"history_points", "history_series"} {
			s := tx.Bucket([]byte(name)).Stats()
			inuse += s.LeafInuse + s.BranchInuse
			alloc += s.LeafAlloc + s.BranchAlloc
		}
		return nil
	})
	return inuse, alloc
}

// BenchmarkHistoryTwoYears lists two years of one plant's, and of one bed's, hourly
// points (17,520 each) from a store holding 2 years of hourly points of 6 beds × 33
// plants (3.5 million plant points). The goal is at most 20 ms. The store is built
// through RecordReadings a day of all beds per transaction (a few minutes; with
// -count=N, N times).
func BenchmarkHistoryTwoYears(b *testing.B) {
	if testing.Short() {
		b.Skip("builds 3.5 million points")
	}
	dir := b.TempDir()
	st := openBench(b, dir)
	closed := false
	defer func() {
		if !closed {
			_ = st.Close() // NoSync and a temporary file: nothing to keep
		}
	}()
	t0, cpu0 := time.Now(), cpuTime()
	f := storetest.FillHistory(b, st, 6, 33, 730*24*time.Hour, time.Hour, 24*6)
	b.Logf("filled %d points in %v (%v CPU)", f.Points, time.Since(t0).Round(time.Second), (cpuTime() - cpu0).Round(time.Second))
	fi, err := os.Stat(st.Path())
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("file %d bytes: %.1f B/point", fi.Size(), float64(fi.Size())/float64(f.Points))
	for _, tc := range []struct {
		name  string
		plant string
	}{{"plant", f.Plants[17]}, {"bed", ""}} {
		b.Run(tc.name, func(b *testing.B) {
			n := 0
			cpu0 := cpuTime()
			for b.Loop() {
				var err error
				if tc.plant == "" {
					pts, e := st.BedHistory(f.Garden.ID, f.Beds[3].ID, f.From, f.To, 0)
					n, err = len(pts), e
				} else {
					pts, e := st.PlantHistory(f.Garden.ID, f.Beds[3].ID, tc.plant, f.From, f.To, 0)
					n, err = len(pts), e
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			if n != 730*24 {
				b.Fatalf("%d points listed, want %d", n, 730*24)
			}
			b.ReportMetric(float64(n), "points/op")
			// CPU time is what the machine's load does not inflate.
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
	closed = true
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	db, err := bbolt.Open(filepath.Join(dir, bolt.FileName), 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = db.Close() }() // read-only: nothing to lose
	inuse, alloc := historyBytes(db)
	b.Logf("history pages: %.1f B/point in use, %.1f allocated", float64(inuse)/float64(f.Points), float64(alloc)/float64(f.Points))
	b.Logf("the file's pages: %s", filePages(db))
}

// filePages says what a file's pages hold: the largest buckets' and the free ones.
func filePages(db *bbolt.DB) string {
	type bucket struct {
		name  string
		bytes int
	}
	var bs []bucket
	free := 0
	_ = db.View(func(tx *bbolt.Tx) error { // a read that cannot fail
		return tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
			s := b.Stats()
			bs = append(bs, bucket{string(name), s.LeafAlloc + s.BranchAlloc})
			return nil
		})
	})
	free = db.Stats().FreePageN * os.Getpagesize()
	slices.SortFunc(bs, func(a, b bucket) int { return b.bytes - a.bytes })
	out := fmt.Sprintf("free %d MB", free>>20)
	for _, b := range bs[:min(5, len(bs))] {
		out += fmt.Sprintf(", %s %d MB", b.name, b.bytes>>20)
	}
	return out
}

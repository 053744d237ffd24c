package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/postgres"
	"github.com/gardend/gardend/store/postgres/pgtest"
	"github.com/gardend/gardend/store/storetest"
)

var benchNow = time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)

func historySize(b *testing.B, dsn string) int64 {
	b.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = conn.Close(context.Background()) }() // nothing to flush
	var n int64
	err = conn.QueryRow(context.Background(), `SELECT pg_total_relation_size('history_chunks') + pg_total_relation_size('history_series')`).Scan(&n)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkHistoryBytesPerPoint: what a point costs in PostgreSQL: 90 days of hourly
// points of one bed of 33 plants (~73,000 points), tables and indexes, as written
// (each day's row rewritten as its points come, the old versions not vacuumed yet)
// and after VACUUM FULL (what it settles to).
func BenchmarkHistoryBytesPerPoint(b *testing.B) {
	dsn := pgtest.NewDatabase(b)
	st, err := postgres.Open(context.Background(), dsn, postgres.Options{Now: func() time.Time { return benchNow }, OpTimeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = st.Close() }() // always nil
	// Each round adds a garden: bytes are per point of every round.
	points := 0
	for b.Loop() {
		// One reading per transaction, as a robot's scans come.
		points += storetest.FillHistory(b, st, 1, 33, 90*24*time.Hour, time.Hour, 1).Points
	}
	written := historySize(b, dsn)
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Exec(context.Background(), `VACUUM FULL history_chunks, history_series`); err != nil {
		b.Fatal(err)
	}
	if err := conn.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(written)/float64(points), "B/point-written")
	b.ReportMetric(float64(historySize(b, dsn))/float64(points), "B/point-vacuumed")
	b.ReportMetric(float64(points), "points")
}

// BenchmarkHistoryTwoYears lists two years of one plant's, and of one bed's, hourly
// points (17,520 each) from a store holding 2 years of hourly points of 6 beds × 33
// plants (3.5 million plant points), as bbolt's benchmark does. The store is built
// through RecordReadings a day of all beds per transaction: 10 to 20 minutes on a
// busy 2-core machine (5 to 12 ms per reading of 33 plants), so run it with
// -timeout 60m.
func BenchmarkHistoryTwoYears(b *testing.B) {
	if testing.Short() {
		b.Skip("builds 3.5 million points")
	}
	dsn := pgtest.NewDatabase(b)
	st, err := postgres.Open(context.Background(), dsn, postgres.Options{Now: func() time.Time { return benchNow }, OpTimeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = st.Close() }() // always nil
	t0 := time.Now()
	f := storetest.FillHistory(b, st, 6, 33, 730*24*time.Hour, time.Hour, 24*6)
	b.Logf("filled %d points in %v; history tables %.1f B/point", f.Points, time.Since(t0).Round(time.Second),
		float64(historySize(b, dsn))/float64(f.Points))
	for _, tc := range []struct {
		name  string
		plant string
	}{{"plant", f.Plants[17]}, {"bed", ""}} {
		b.Run(tc.name, func(b *testing.B) {
			n := 0
			for b.Loop() {
				var pts []store.HistoryPoint
				if tc.plant == "" {
					pts, err = st.BedHistory(f.Garden.ID, f.Beds[3].ID, f.From, f.To, 0)
				} else {
					pts, err = st.PlantHistory(f.Garden.ID, f.Beds[3].ID, tc.plant, f.From, f.To, 0)
				}
				if err != nil {
					b.Fatal(err)
				}
				n = len(pts)
			}
			if n != 730*24 {
				b.Fatalf("%d points listed, want %d", n, 730*24)
			}
			b.ReportMetric(float64(n), "points/op")
		})
	}
}

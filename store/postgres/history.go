package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gardend/gardend/store"
)

// History: a row per series (history_series) with what it remembers of its newest
// point, and a row per series and UTC day holding that day's points
// (history_chunks). A reading locks its bed's row (FOR NO KEY UPDATE, after its
// garden's FOR KEY SHARE, in the writers' lock order), so that two nodes recording
// the same bed at once take turns and the second finds the first's points: a
// measurement is kept once. Guidance changes lock the garden's beds the same way.

// seriesRow is a series as read.
type seriesRow struct {
	id    uint64
	state store.SeriesState
	name  string
}

// lockBed locks a bed for recording: its garden FOR KEY SHARE, then its row FOR NO
// KEY UPDATE. ok is false when the bed is gone.
func lockBed(ctx context.Context, tx pgx.Tx, bedID uint64) (gardenID uint64, ok bool, err error) {
	err = tx.QueryRow(ctx, `SELECT garden_id FROM beds WHERE id = $1`, bedID).Scan(&gardenID)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM gardens WHERE id = $1 FOR KEY SHARE`, gardenID); err != nil {
		return 0, false, err
	}
	var found bool
	err = tx.QueryRow(ctx, `SELECT true FROM beds WHERE id = $1 AND garden_id = $2 FOR NO KEY UPDATE`, bedID, gardenID).Scan(&found)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	return gardenID, err == nil, err
}

// seriesOfBed reads every series of a bed by plant ("" for the bed).
func seriesOfBed(ctx context.Context, q querier, bedID uint64) (map[string]seriesRow, error) {
	rows, err := q.Query(ctx, `SELECT plant, id, measurement, stamp, at, species, latest, gone, name
		FROM history_series WHERE bed_id = $1`, bedID)
	if err != nil {
		return nil, err
	}
	out := map[string]seriesRow{}
	var (
		plant  string
		r      seriesRow
		stamp  *time.Time
		latest []byte
	)
	_, err = pgx.ForEachRow(rows, []any{&plant, &r.id, &r.state.Measurement, &stamp, &r.state.At, &r.state.Species, &latest, &r.state.Gone, &r.name}, func() error {
		row := r
		row.state.At = row.state.At.UTC()
		row.state.Stamp = time.Time{}
		if stamp != nil {
			row.state.Stamp = stamp.UTC()
		}
		v, err := store.DecodeValues(latest)
		if err != nil {
			return fmt.Errorf("series %d: %w", row.id, err)
		}
		row.state.Values = v
		out[plant] = row
		return nil
	})
	return out, err
}

// RecordReading keeps what a read of a bed showed (store.HistoryStore).
func (s *Store) RecordReading(r store.BedReading) (store.Recorded, error) {
	return s.RecordReadings([]store.BedReading{r})
}

// RecordReadings keeps several readings in one transaction.
func (s *Store) RecordReadings(rs []store.BedReading) (store.Recorded, error) {
	for _, r := range rs {
		if err := store.ValidateReading(r); err != nil {
			return store.Recorded{}, err
		}
	}
	var out store.Recorded
	err := s.write(func(ctx context.Context, tx pgx.Tx) error {
		out = store.Recorded{}
		now := s.now()
		for _, r := range rs {
			if err := recordReading(ctx, tx, now, r, &out); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// newPoint is a point to keep, with its series' new state.
type newPoint struct {
	plant string
	state store.SeriesState
	name  string
	point store.HistoryPoint
}

func recordReading(ctx context.Context, tx pgx.Tx, now time.Time, r store.BedReading, out *store.Recorded) error {
	if !store.IsLocal(r.Bed) {
		return nil // a replica's history comes from its home, never from a read here
	}
	gardenID, ok, err := lockBed(ctx, tx, r.Bed)
	if err != nil || !ok {
		return err
	}
	g, err := guidanceOf(ctx, tx, gardenID)
	if err != nil {
		return err
	}
	series, err := seriesOfBed(ctx, tx, r.Bed)
	if err != nil {
		return err
	}
	open, err := openAlertsOfBed(ctx, tx, r.Bed)
	if err != nil {
		return err
	}
	var (
		plan    store.AlertPlan
		points  []newPoint
		seen    = make(map[string]bool, len(r.Plants))
		back    = []string{} // plants gone before, seen again
		goneNow = []string{}
	)
	for _, p := range r.Plants {
		seen[p.ID] = true
		row, found := series[p.ID]
		sub := store.AlertSubject{Garden: gardenID, Bed: r.Bed, BedName: r.Name, Plant: p.ID, Species: store.SpeciesName(p.Species)}
		if found && !row.state.IsNew(p, r.Read) {
			if row.state.Gone {
				back = append(back, p.ID)
			}
			continue
		}
		at := p.At(r.Read)
		st := store.SeriesState{Measurement: p.Measurement, At: at, Species: sub.Species, Values: p.Values}
		if !p.Stamp.IsZero() {
			st.Stamp = ts(p.Stamp)
		}
		points = append(points, newPoint{plant: p.ID, state: st, point: store.HistoryPoint{At: at, HistoryValues: p.Values}})
		plan.Add(store.PlanAlerts(g.Thresholds, sub, open[p.ID], p.Values, at, false))
	}
	for plant, row := range series {
		if plant != "" && !seen[plant] && !row.state.Gone {
			goneNow = append(goneNow, plant)
			sub := store.AlertSubject{Garden: gardenID, Bed: r.Bed, BedName: r.Name, Plant: plant, Species: row.state.Species}
			plan.Add(store.PlanAlerts(g.Thresholds, sub, open[plant], store.HistoryValues{}, r.Read, true))
		}
	}
	if len(points) > 0 {
		at := store.HistoryTime(r.At)
		species := store.SpeciesName(r.Species)
		points = append(points, newPoint{plant: "", name: r.Name,
			state: store.SeriesState{At: at, Species: species, Values: r.Summary},
			point: store.HistoryPoint{At: at, HistoryValues: r.Summary}})
		sub := store.AlertSubject{Garden: gardenID, Bed: r.Bed, BedName: r.Name, Species: species}
		plan.Add(store.PlanAlerts(g.Thresholds, sub, open[""], r.Summary, at, false))
		out.Plants += len(points) - 1
		out.Bed = true
		if err := keepPoints(ctx, tx, now, r.Bed, points); err != nil {
			return err
		}
	}
	if len(back)+len(goneNow) > 0 {
		if _, err := tx.Exec(ctx, `UPDATE history_series SET gone = plant = ANY($2::text[]) WHERE bed_id = $1 AND plant = ANY($2::text[] || $3::text[])`,
			r.Bed, goneNow, back); err != nil {
			return err
		}
	}
	return applyAlertPlan(ctx, tx, now, plan, out)
}

// keepPoints writes the series' new states and merges the points into their days'
// chunks, in a few statements however many plants there are.
func keepPoints(ctx context.Context, tx pgx.Tx, now time.Time, bedID uint64, points []newPoint) error {
	n := len(points)
	var (
		plants, measurements, species, names = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		stamps                               = make([]*time.Time, n)
		ats                                  = make([]time.Time, n)
		latest                               = make([][]byte, n)
	)
	for i, p := range points {
		plants[i], measurements[i], species[i], names[i] = p.plant, p.state.Measurement, p.state.Species, p.name
		if !p.state.Stamp.IsZero() {
			stamps[i] = &p.state.Stamp
		}
		ats[i] = ts(p.state.At)
		latest[i] = store.AppendValues(nil, p.state.Values)
	}
	rows, err := tx.Query(ctx, `INSERT INTO history_series (bed_id, plant, measurement, stamp, at, species, latest, gone, name)
		SELECT $1, p, m, st, a, sp, l, false, nm FROM unnest($2::text[], $3::text[], $4::timestamptz[], $5::timestamptz[], $6::text[], $7::bytea[], $8::text[])
			AS u(p, m, st, a, sp, l, nm)
		ON CONFLICT (bed_id, plant) DO UPDATE SET measurement = excluded.measurement, stamp = excluded.stamp,
			at = excluded.at, species = excluded.species, latest = excluded.latest, gone = false,
			name = CASE WHEN excluded.plant = '' THEN excluded.name ELSE history_series.name END
		RETURNING plant, id`, bedID, plants, measurements, stamps, ats, species, latest, names)
	if err != nil {
		return err
	}
	ids := make(map[string]uint64, n)
	var (
		plant string
		id    uint64
	)
	if _, err := pgx.ForEachRow(rows, []any{&plant, &id}, func() error { ids[plant] = id; return nil }); err != nil {
		return err
	}
	seriesIDs, days := make([]int64, n), make([]int32, n)
	for i, p := range points {
		seriesIDs[i], days[i] = int64(ids[p.plant]), int32(store.HistoryDay(p.point.At))
	}
	rows, err = tx.Query(ctx, `SELECT c.series, c.day, c.points FROM history_chunks c
		JOIN unnest($1::bigint[], $2::int[]) AS u(s, d) ON c.series = u.s AND c.day = u.d FOR UPDATE OF c`, seriesIDs, days)
	if err != nil {
		return err
	}
	type chunkKey struct {
		series int64
		day    int32
	}
	chunks := map[chunkKey][]byte{}
	var (
		ck   chunkKey
		data []byte
	)
	if _, err := pgx.ForEachRow(rows, []any{&ck.series, &ck.day, &data}, func() error {
		chunks[ck] = data
		return nil
	}); err != nil {
		return err
	}
	for i, p := range points {
		k := chunkKey{seriesIDs[i], days[i]}
		merged, err := store.MergeIntoChunk(uint32(k.day), chunks[k], p.point)
		if err != nil {
			return fmt.Errorf("series %d: %w", k.series, err)
		}
		chunks[k] = merged
	}
	outS, outD, outN, outP := make([]int64, 0, len(chunks)), make([]int32, 0, len(chunks)), make([]int32, 0, len(chunks)), make([][]byte, 0, len(chunks))
	for k, data := range chunks {
		count, err := store.ChunkLen(uint32(k.day), data)
		if err != nil {
			return err
		}
		outS, outD, outN, outP = append(outS, k.series), append(outD, k.day), append(outN, int32(count)), append(outP, data)
	}
	_, err = tx.Exec(ctx, `INSERT INTO history_chunks (series, day, n, points)
		SELECT * FROM unnest($1::bigint[], $2::int[], $3::int[], $4::bytea[])
		ON CONFLICT (series, day) DO UPDATE SET n = excluded.n, points = excluded.points`, outS, outD, outN, outP)
	if err != nil {
		return err
	}
	// The change feed gets each hour of the bed the points fall in.
	var refs []uint64
	for _, p := range points {
		if ref := store.HistorySpanRef(store.HistoryDay(p.point.At), store.SpanSlot(p.point.At)); !slices.Contains(refs, ref) {
			refs = append(refs, ref)
		}
	}
	slices.Sort(refs)
	beds := make([]uint64, len(refs))
	for i := range beds {
		beds[i] = bedID
	}
	return recordChanges(ctx, tx, now, store.KindHistory, beds, refs)
}

// BedHistory lists a bed's points (store.HistoryStore).
func (s *Store) BedHistory(gardenID, bedID uint64, from, until time.Time, limit int) ([]store.HistoryPoint, error) {
	return s.history(gardenID, bedID, "", from, until, limit)
}

// PlantHistory lists a plant's points (store.HistoryStore).
func (s *Store) PlantHistory(gardenID, bedID uint64, plant string, from, until time.Time, limit int) ([]store.HistoryPoint, error) {
	if plant == "" {
		return nil, fmt.Errorf("plant %q: %w", plant, store.ErrNotFound)
	}
	return s.history(gardenID, bedID, plant, from, until, limit)
}

func (s *Store) history(gardenID, bedID uint64, plant string, from, until time.Time, limit int) ([]store.HistoryPoint, error) {
	limit = store.HistoryLimit(limit)
	out := []store.HistoryPoint{}
	err := s.read(func(ctx context.Context, tx pgx.Tx) error {
		out = out[:0]
		if _, err := bedOf(ctx, tx, gardenID, bedID); err != nil {
			return err
		}
		first, last, ok := store.HistoryRange(from, until)
		if !ok {
			return nil
		}
		rows, err := tx.Query(ctx, `SELECT c.day, c.points FROM history_chunks c
			JOIN history_series s ON s.id = c.series
			WHERE s.bed_id = $1 AND s.plant = $2 AND c.day BETWEEN $3 AND $4 ORDER BY c.day`,
			bedID, plant, int64(first), int64(last))
		if err != nil {
			return err
		}
		var (
			day  int64
			data []byte
			cr   store.ChunkReader
		)
		_, err = pgx.ForEachRow(rows, []any{&day, &data}, func() error {
			var err error
			if out, err = cr.Append(out, uint32(day), data, from, until); err != nil {
				return err
			}
			if len(out) > limit {
				return store.TooManyPoints(limit)
			}
			return nil
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DropHistoryBefore deletes the points dated before t (store.HistoryStore): whole
// days before t's day in one statement, then the points of t's day before t.
func (s *Store) DropHistoryBefore(t time.Time) (int, error) {
	if !store.InHistoryRange(t) {
		return 0, nil
	}
	cut := store.HistoryDay(t)
	var dropped int
	err := s.write(func(ctx context.Context, tx pgx.Tx) error {
		dropped = 0
		var n *int64
		if err := tx.QueryRow(ctx, `WITH d AS (DELETE FROM history_chunks WHERE day < $1 RETURNING n) SELECT sum(n) FROM d`, int64(cut)).Scan(&n); err != nil {
			return err
		}
		if n != nil {
			dropped = int(*n)
		}
		rows, err := tx.Query(ctx, `SELECT series, points FROM history_chunks WHERE day = $1 FOR UPDATE`, int64(cut))
		if err != nil {
			return err
		}
		type trimmed struct {
			series int64
			data   []byte
			n      int
		}
		var changes []trimmed
		var (
			series int64
			data   []byte
		)
		if _, err := pgx.ForEachRow(rows, []any{&series, &data}, func() error {
			kept, k, err := store.TrimChunk(cut, data, t)
			if err != nil {
				return fmt.Errorf("series %d: %w", series, err)
			}
			if k > 0 {
				n, err := store.ChunkLen(cut, kept)
				if err != nil {
					return err
				}
				changes = append(changes, trimmed{series, kept, n})
				dropped += k
			}
			return nil
		}); err != nil {
			return err
		}
		for _, c := range changes {
			var err error
			if c.n == 0 {
				_, err = tx.Exec(ctx, `DELETE FROM history_chunks WHERE series = $1 AND day = $2`, c.series, int64(cut))
			} else {
				_, err = tx.Exec(ctx, `UPDATE history_chunks SET n = $3, points = $4 WHERE series = $1 AND day = $2`, c.series, int64(cut), c.n, c.data)
			}
			if err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `DELETE FROM alerts WHERE closed < $1`, t)
		return err
	})
	return dropped, err
}

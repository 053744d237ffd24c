package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gardend/gardend/store"
)

// What history, alerts and guidance replicate (store/historysync.go).

// HistorySpan returns a bed's series with points in the span
// (store.HistoryReplication).
func (s *Store) HistorySpan(bedID uint64, day uint32, slot uint8) (store.HistorySpan, error) {
	var out store.HistorySpan
	err := s.read(func(ctx context.Context, tx pgx.Tx) error {
		out = store.HistorySpan{Bed: bedID, Day: day, Slot: slot}
		err := tx.QueryRow(ctx, `SELECT garden_id FROM beds WHERE id = $1`, bedID).Scan(&out.Garden)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("bed %d: %w", bedID, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT s.plant, s.species, s.name, c.points FROM history_chunks c
			JOIN history_series s ON s.id = c.series WHERE s.bed_id = $1 AND c.day = $2 ORDER BY s.plant`, bedID, int64(day))
		if err != nil {
			return err
		}
		var sr store.SeriesSpan
		var data []byte
		_, err = pgx.ForEachRow(rows, []any{&sr.Plant, &sr.Species, &sr.Name, &data}, func() error {
			pts, err := store.SpanPoints(day, slot, data)
			if err != nil {
				return fmt.Errorf("bed %d plant %q: %w", bedID, sr.Plant, err)
			}
			if len(pts) > 0 {
				row := sr
				row.Points = append([]byte(nil), pts...)
				out.Series = append(out.Series, row)
			}
			return nil
		})
		return err
	})
	return out, err
}

func (w *replicaWriter) PutHistorySpan(sp store.HistorySpan) error {
	if err := sp.Validate(); err != nil {
		return err
	}
	// A few statements however many series: a box sends a span for every hour of
	// every bed.
	ctx, tx := w.ctx, w.tx
	var found bool
	err := tx.QueryRow(ctx, `SELECT true FROM beds WHERE id = $1 AND garden_id = $2`, sp.Bed, sp.Garden).Scan(&found)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("bed %d of garden %d: %w", sp.Bed, sp.Garden, store.ErrNotFound)
	}
	if err != nil {
		return err
	}
	series, err := seriesOfBed(ctx, tx, sp.Bed)
	if err != nil {
		return err
	}
	incoming := make(map[string]store.SeriesSpan, len(sp.Series))
	var newPlants []string
	for _, s := range sp.Series {
		incoming[s.Plant] = s
		if _, ok := series[s.Plant]; !ok {
			newPlants = append(newPlants, s.Plant)
		}
	}
	if len(newPlants) > 0 {
		rows, err := tx.Query(ctx, `INSERT INTO history_series (bed_id, plant, measurement, at, species, latest, gone, name)
			SELECT $1, p, '', $3, '', $4, false, '' FROM unnest($2::text[]) AS u(p) RETURNING plant, id`,
			sp.Bed, newPlants, ts(store.DayStart(sp.Day)), store.AppendValues(nil, store.HistoryValues{}))
		if err != nil {
			return err
		}
		var (
			plant string
			id    uint64
		)
		if _, err := pgx.ForEachRow(rows, []any{&plant, &id}, func() error {
			series[plant] = seriesRow{id: id, state: store.SeriesState{At: store.DayStart(sp.Day)}}
			return nil
		}); err != nil {
			return err
		}
	}
	ids := make([]int64, 0, len(series))
	plantOf := make(map[int64]string, len(series))
	for plant, row := range series {
		ids = append(ids, int64(row.id))
		plantOf[int64(row.id)] = plant
	}
	rows, err := tx.Query(ctx, `SELECT series, points FROM history_chunks WHERE series = ANY($1) AND day = $2 FOR UPDATE`, ids, int64(sp.Day))
	if err != nil {
		return err
	}
	old := map[string][]byte{}
	var (
		sid  int64
		data []byte
	)
	if _, err := pgx.ForEachRow(rows, []any{&sid, &data}, func() error {
		old[plantOf[sid]] = append([]byte(nil), data...)
		return nil
	}); err != nil {
		return err
	}
	var (
		putS, delS, stS   []int64
		putN              []int32
		putP, stLatest    [][]byte
		stSpecies, stName []string
		stAt              []time.Time
	)
	for plant, row := range series {
		in, sent := incoming[plant]
		if old[plant] == nil && !sent {
			continue
		}
		data, newest, err := store.ReplaceSpan(sp.Day, sp.Slot, old[plant], in.Points)
		if err != nil {
			return fmt.Errorf("series %d: %w", row.id, err)
		}
		if data == nil {
			delS = append(delS, int64(row.id))
		} else {
			n, err := store.ChunkLen(sp.Day, data)
			if err != nil {
				return err
			}
			putS, putN, putP = append(putS, int64(row.id)), append(putN, int32(n)), append(putP, data)
		}
		if !sent {
			continue
		}
		at, latest := row.state.At, store.AppendValues(nil, row.state.Values)
		if newest != nil && !newest.At.Before(row.state.At) {
			at, latest = newest.At, store.AppendValues(nil, newest.HistoryValues)
		}
		stS, stSpecies, stName = append(stS, int64(row.id)), append(stSpecies, in.Species), append(stName, in.Name)
		stAt, stLatest = append(stAt, ts(at)), append(stLatest, latest)
	}
	b := &pgx.Batch{}
	if len(delS) > 0 {
		b.Queue(`DELETE FROM history_chunks WHERE series = ANY($1) AND day = $2`, delS, int64(sp.Day))
	}
	if len(putS) > 0 {
		b.Queue(`INSERT INTO history_chunks (series, day, n, points) SELECT s, $2, n, p FROM unnest($1::bigint[], $3::int[], $4::bytea[]) AS u(s, n, p)
			ON CONFLICT (series, day) DO UPDATE SET n = excluded.n, points = excluded.points`, putS, int64(sp.Day), putN, putP)
	}
	if len(stS) > 0 {
		b.Queue(`UPDATE history_series h SET species = u.sp, at = u.a, latest = u.l, name = CASE WHEN h.plant = '' THEN u.nm ELSE h.name END
			FROM unnest($1::bigint[], $2::text[], $3::timestamptz[], $4::bytea[], $5::text[]) AS u(id, sp, a, l, nm) WHERE h.id = u.id`,
			stS, stSpecies, stAt, stLatest, stName)
	}
	return tx.SendBatch(ctx, b).Close()
}

func (w *replicaWriter) PutAlert(a store.Alert) error {
	a, err := store.ReplicaAlert(a)
	if err != nil {
		return err
	}
	var closed *time.Time
	if a.Closed != nil {
		c := ts(*a.Closed)
		closed = &c
	}
	// A task that is not here (deleted, or on its way) reads as none, as it does
	// at the home once its log is deleted.
	tag, err := w.tx.Exec(w.ctx, `INSERT INTO alerts (id, garden_id, bed_id, bed_name, plant, kind, level, severity, species, since, closed, task)
		SELECT $1, b.garden_id, b.id, $4, $5, $6, $7, $8, $9, $10, $11, (SELECT id FROM logs WHERE id = $12)
		FROM beds b WHERE b.id = $3 AND b.garden_id = $2
		ON CONFLICT (id) DO UPDATE SET bed_name = excluded.bed_name, level = excluded.level, severity = excluded.severity,
			species = excluded.species, since = excluded.since, closed = excluded.closed, task = excluded.task`,
		a.ID, a.Garden, a.Bed, a.BedName, a.Plant, string(a.Kind), a.Level, a.Severity, a.Species, ts(a.Since), closed, a.Task)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("bed %d of garden %d: %w", a.Bed, a.Garden, store.ErrNotFound)
	}
	return nil
}

func (w *replicaWriter) PutGuidance(gardenID uint64, g store.Guidance) error {
	g = g.Normalize()
	if err := g.Validate(); err != nil {
		return err
	}
	doc, err := json.Marshal(g)
	if err != nil {
		return err
	}
	tag, err := w.tx.Exec(w.ctx, `INSERT INTO guidance (garden_id, doc) SELECT id, $2 FROM gardens WHERE id = $1
		ON CONFLICT (garden_id) DO UPDATE SET doc = excluded.doc`, gardenID, doc)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("garden %d: %w", gardenID, store.ErrNotFound)
	}
	return nil
}

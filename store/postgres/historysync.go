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
	for _, s := range sp.Series {
		incoming[s.Plant] = s
		if _, ok := series[s.Plant]; ok {
			continue
		}
		var id uint64
		if err := tx.QueryRow(ctx, `INSERT INTO history_series (bed_id, plant, measurement, at, species, latest, gone, name)
			VALUES ($1, $2, '', $3, $4, $5, false, '') RETURNING id`,
			sp.Bed, s.Plant, ts(store.DayStart(sp.Day)), s.Species, store.AppendValues(nil, store.HistoryValues{})).Scan(&id); err != nil {
			return err
		}
		series[s.Plant] = seriesRow{id: id, state: store.SeriesState{At: store.DayStart(sp.Day)}}
	}
	for plant, row := range series {
		in, sent := incoming[plant]
		var old []byte
		err := tx.QueryRow(ctx, `SELECT points FROM history_chunks WHERE series = $1 AND day = $2 FOR UPDATE`, row.id, int64(sp.Day)).Scan(&old)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if old == nil && !sent {
			continue
		}
		data, newest, err := store.ReplaceSpan(sp.Day, sp.Slot, old, in.Points)
		if err != nil {
			return fmt.Errorf("series %d: %w", row.id, err)
		}
		if data == nil {
			_, err = tx.Exec(ctx, `DELETE FROM history_chunks WHERE series = $1 AND day = $2`, row.id, int64(sp.Day))
		} else {
			var n int
			if n, err = store.ChunkLen(sp.Day, data); err != nil {
				return err
			}
			_, err = tx.Exec(ctx, `INSERT INTO history_chunks (series, day, n, points) VALUES ($1, $2, $3, $4)
				ON CONFLICT (series, day) DO UPDATE SET n = excluded.n, points = excluded.points`, row.id, int64(sp.Day), n, data)
		}
		if err != nil {
			return err
		}
		if !sent {
			continue
		}
		at, latest := row.state.At, store.AppendValues(nil, row.state.Values)
		if newest != nil && !newest.At.Before(row.state.At) {
			at, latest = newest.At, store.AppendValues(nil, newest.HistoryValues)
		}
		if _, err := tx.Exec(ctx, `UPDATE history_series SET species = $2, at = $3, latest = $4,
			name = CASE WHEN plant = '' THEN $5 ELSE name END WHERE id = $1`,
			row.id, in.Species, ts(at), latest, in.Name); err != nil {
			return err
		}
	}
	return nil
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

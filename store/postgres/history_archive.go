package postgres

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gardend/gardend/store"
)

// exportHistorySteps are Export's steps for guidance, series, chunks and alerts, in
// the archive's order (store/historyarchive.go).
func exportHistorySteps(each func(kind, query string, scan func(pgx.Rows) (any, error)) error) []func() error {
	return []func() error{
		func() error {
			return each(store.KindGuidance, `SELECT garden_id, doc FROM guidance ORDER BY garden_id`, func(r pgx.Rows) (any, error) {
				var (
					a   store.ArchivedGuidance
					doc []byte
				)
				if err := r.Scan(&a.Garden, &doc); err != nil {
					return nil, err
				}
				a.Guidance = store.DefaultGuidance()
				if err := json.Unmarshal(doc, &a.Guidance); err != nil {
					return nil, fmt.Errorf("decode guidance of garden %d: %w", a.Garden, err)
				}
				return a, nil
			})
		},
		func() error {
			return each(store.KindHistorySeries, `SELECT bed_id, plant, measurement, stamp, at, species, latest, gone, name
				FROM history_series ORDER BY bed_id, plant`, func(r pgx.Rows) (any, error) {
				var (
					a     store.ArchivedSeries
					stamp *time.Time
				)
				err := r.Scan(&a.Bed, &a.Plant, &a.Measurement, &stamp, &a.At, &a.Species, &a.Values, &a.Gone, &a.Name)
				a.At = a.At.UTC()
				if stamp != nil {
					a.Stamp = new(stamp.UTC())
				}
				return a, err
			})
		},
		func() error {
			return each(store.KindHistoryChunk, `SELECT s.bed_id, s.plant, c.day, c.points FROM history_chunks c
				JOIN history_series s ON s.id = c.series ORDER BY s.bed_id, s.plant, c.day`, func(r pgx.Rows) (any, error) {
				var (
					a   store.ArchivedChunk
					day int64
				)
				err := r.Scan(&a.Bed, &a.Plant, &day, &a.Points)
				a.Day = uint32(day)
				return a, err
			})
		},
		func() error {
			return each(store.KindAlert, `SELECT id, garden_id, bed_id, bed_name, plant, kind, level, severity, species, since, closed, task
				FROM alerts ORDER BY id`, func(r pgx.Rows) (any, error) {
				var (
					a      store.ArchivedAlert
					kind   string
					closed *time.Time
				)
				err := r.Scan(&a.ID, &a.Garden, &a.Bed, &a.BedName, &a.Plant, &kind, &a.Level, &a.Severity, &a.Species, &a.Since, &closed, &a.Task)
				a.Kind, a.Since = store.AlertKind(kind), a.Since.UTC()
				if closed != nil {
					a.Closed = new(closed.UTC())
				}
				return a, err
			})
		},
	}
}

// loadHistory queues the insert of a record of a history kind; handled is false for
// another kind.
func (im *importer) loadHistory(rec any) (handled bool, err error) {
	switch r := rec.(type) {
	case *store.ArchivedGuidance:
		doc, err := json.Marshal(r.Guidance)
		if err != nil {
			return true, err
		}
		return true, im.queue(fmt.Sprintf("guidance of garden %d", r.Garden), `INSERT INTO guidance (garden_id, doc) VALUES ($1, $2)`, r.Garden, doc)
	case *store.ArchivedSeries:
		var stamp *time.Time
		if r.Stamp != nil {
			stamp = new(ts(*r.Stamp))
		}
		return true, im.queue(fmt.Sprintf("series of bed %d plant %q", r.Bed, r.Plant),
			`INSERT INTO history_series (bed_id, plant, measurement, stamp, at, species, latest, gone, name)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			r.Bed, r.Plant, r.Measurement, stamp, ts(r.At), r.Species, r.Values, r.Gone, r.Name)
	case *store.ArchivedChunk:
		n, err := store.ChunkLen(r.Day, r.Points)
		if err != nil {
			return true, err
		}
		// A series the archive did not hold before makes the id null: refused.
		what := fmt.Sprintf("day %d of bed %d plant %q (its series first)", r.Day, r.Bed, r.Plant)
		return true, im.queue(what, `INSERT INTO history_chunks (series, day, n, points)
			VALUES ((SELECT id FROM history_series WHERE bed_id = $1 AND plant = $2), $3, $4, $5)`,
			r.Bed, r.Plant, int64(r.Day), n, r.Points)
	case *store.ArchivedAlert:
		return true, im.queue(fmt.Sprintf("alert %d", r.ID), `INSERT INTO alerts (id, garden_id, bed_id, bed_name, plant, kind, level, severity, species, since, closed, task)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
			r.ID, r.Garden, r.Bed, r.BedName, r.Plant, string(r.Kind), r.Level, r.Severity, r.Species, ts(r.Since), optTime(r.Closed), r.Task)
	}
	return false, nil
}

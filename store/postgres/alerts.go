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

// alertColumns read an alert as the API answers it: the company of its garden and
// the bed's name as registered, else as read.
const alertColumns = `a.id, g.company_id, a.garden_id, a.bed_id, coalesce(nullif(b.name, ''), a.bed_name), a.plant,
	a.kind, a.level, a.severity, a.species, a.since, a.closed, a.task`

const alertFrom = ` FROM alerts a JOIN gardens g ON g.id = a.garden_id LEFT JOIN beds b ON b.id = a.bed_id `

func scanAlert(row pgx.Row) (store.Alert, error) {
	var (
		a      store.Alert
		kind   string
		closed *time.Time
	)
	err := row.Scan(&a.ID, &a.Company, &a.Garden, &a.Bed, &a.BedName, &a.Plant, &kind, &a.Level, &a.Severity, &a.Species,
		&a.Since, &closed, &a.Task)
	if err != nil {
		return a, err
	}
	a.Kind, a.Since = store.AlertKind(kind), a.Since.UTC()
	if closed != nil {
		c := closed.UTC()
		a.Closed = &c
	}
	return a, nil
}

func collectAlerts(rows pgx.Rows, err error) ([]store.Alert, error) {
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Alert, error) { return scanAlert(r) })
	if out == nil && err == nil {
		out = []store.Alert{}
	}
	store.SortAlerts(out)
	return out, err
}

// openAlertsOfBed returns a bed's open alerts by plant ("" for the bed's own).
func openAlertsOfBed(ctx context.Context, q querier, bedID uint64) (map[string][]store.Alert, error) {
	rows, err := q.Query(ctx, `SELECT `+alertColumns+alertFrom+`WHERE a.bed_id = $1 AND a.closed IS NULL`, bedID)
	as, err := collectAlerts(rows, err)
	if err != nil {
		return nil, err
	}
	out := map[string][]store.Alert{}
	for _, a := range as {
		out[a.Plant] = append(out[a.Plant], a)
	}
	return out, nil
}

// applyAlertPlan writes what an evaluation decided, in one round trip, and counts it
// in out; the change feed gets each alert.
func applyAlertPlan(ctx context.Context, tx pgx.Tx, now time.Time, p store.AlertPlan, out *store.Recorded) error {
	if p.Empty() {
		return nil
	}
	b := &pgx.Batch{}
	n := len(p.Raise) + len(p.Update) + len(p.Close)
	ids, gardens := make([]uint64, 0, n), make([]uint64, 0, n)
	for _, a := range p.Raise {
		b.Queue(`INSERT INTO alerts (garden_id, bed_id, bed_name, plant, kind, level, severity, species, since)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id`,
			a.Garden, a.Bed, a.BedName, a.Plant, string(a.Kind), a.Level, a.Severity, a.Species, ts(a.Since)).
			QueryRow(func(row pgx.Row) error {
				var id uint64
				if err := row.Scan(&id); err != nil {
					return err
				}
				ids, gardens = append(ids, id), append(gardens, a.Garden)
				return nil
			})
	}

	for _, a := range p.Update {
		b.Queue(`UPDATE alerts SET level = $2, severity = $3, bed_name = $4, species = $5 WHERE id = $1`,
			a.ID, a.Level, a.Severity, a.BedName, a.Species)
	}
	for _, a := range p.Close {
		b.Queue(`UPDATE alerts SET closed = $2 WHERE id = $1`, a.ID, ts(*a.Closed))
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	for _, a := range append(p.Update, p.Close...) {
		ids, gardens = append(ids, a.ID), append(gardens, a.Garden)
	}
	if err := recordChanges(ctx, tx, now, store.KindAlert, ids, gardens); err != nil {
		return err
	}
	out.Raised += len(p.Raise)
	out.Closed += len(p.Close)
	return nil
}

// Alerts lists a garden's open or closed alerts (store.AlertStore).
func (s *Store) Alerts(gardenID uint64, open bool) ([]store.Alert, error) {
	var out []store.Alert
	err := s.read(func(ctx context.Context, tx pgx.Tx) error {
		if _, err := gardenByID(ctx, tx, gardenID); err != nil {
			return err
		}
		var err error
		if open {
			out, err = collectAlerts(tx.Query(ctx, `SELECT `+alertColumns+alertFrom+`WHERE a.garden_id = $1 AND a.closed IS NULL`, gardenID))
		} else {
			out, err = collectAlerts(tx.Query(ctx, `SELECT `+alertColumns+alertFrom+`WHERE a.garden_id = $1 AND a.closed IS NOT NULL
				ORDER BY a.closed DESC, a.id DESC LIMIT $2`, gardenID, store.MaxClosedAlerts))
		}
		return err
	})
	return out, err
}

// OpenAlerts lists the open alerts of the visible gardens (store.AlertStore).
func (s *Store) OpenAlerts(visible map[uint64]bool) ([]store.Alert, error) {
	var out []store.Alert
	err := s.do(func(ctx context.Context) error {
		var err error
		if visible == nil {
			out, err = collectAlerts(s.pool.Query(ctx, `SELECT `+alertColumns+alertFrom+`WHERE a.closed IS NULL`))
			return err
		}
		ids := make([]int64, 0, len(visible))
		for id, ok := range visible {
			if ok {
				ids = append(ids, int64(id))
			}
		}
		out, err = collectAlerts(s.pool.Query(ctx, `SELECT `+alertColumns+alertFrom+`WHERE a.closed IS NULL AND a.garden_id = ANY($1)`, ids))
		return err
	})
	return out, err
}

func alertByID(ctx context.Context, q querier, gardenID, alertID uint64, lock bool) (store.Alert, error) {
	suffix := ""
	if lock {
		suffix = ` FOR UPDATE OF a`
	}
	a, err := scanAlert(q.QueryRow(ctx, `SELECT `+alertColumns+alertFrom+`WHERE a.id = $1`+suffix, alertID))
	if errors.Is(err, pgx.ErrNoRows) || err == nil && a.Garden != gardenID {
		return store.Alert{}, fmt.Errorf("alert %d of garden %d: %w", alertID, gardenID, store.ErrNotFound)
	}
	return a, err
}

// Alert returns an alert of the garden (store.AlertStore).
func (s *Store) Alert(gardenID, alertID uint64) (store.Alert, error) {
	var out store.Alert
	err := s.do(func(ctx context.Context) error {
		var err error
		out, err = alertByID(ctx, s.pool, gardenID, alertID, false)
		return err
	})
	return out, err
}

// SetAlertTask records the alert's task (store.AlertStore). The alert's row is
// locked, so of two tasks made at once for it one is recorded.
func (s *Store) SetAlertTask(gardenID, alertID, logID uint64) (store.Alert, error) {
	var out store.Alert
	err := s.write(func(ctx context.Context, tx pgx.Tx) error {
		a, err := alertByID(ctx, tx, gardenID, alertID, true)
		if err != nil {
			return err
		}
		if a.Task != nil {
			return store.AlertHasTask(a.ID, *a.Task)
		}
		if _, err := logByID(ctx, tx, gardenID, logID, false); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE alerts SET task = $2 WHERE id = $1`, alertID, logID); err != nil {
			return err
		}
		if err := recordChange(ctx, tx, s.now(), store.KindAlert, alertID, gardenID, false); err != nil {
			return err
		}
		out, err = alertByID(ctx, tx, gardenID, alertID, false)
		return err
	})
	return out, err
}

// guidanceOf reads a garden's guidance, the defaults when it set none.
func guidanceOf(ctx context.Context, q querier, gardenID uint64) (store.Guidance, error) {
	g := store.DefaultGuidance()
	var doc []byte
	err := q.QueryRow(ctx, `SELECT doc FROM guidance WHERE garden_id = $1`, gardenID).Scan(&doc)
	if errors.Is(err, pgx.ErrNoRows) {
		return g, nil
	}
	if err != nil {
		return g, err
	}
	if err := json.Unmarshal(doc, &g); err != nil {
		return g, fmt.Errorf("decode guidance of garden %d: %w", gardenID, err)
	}
	if g.Advice == nil {
		g.Advice = map[string]map[store.AlertKind]store.Advice{}
	}
	return g, nil
}

// Guidance returns the garden's guidance (store.AlertStore).
func (s *Store) Guidance(gardenID uint64) (store.Guidance, error) {
	var out store.Guidance
	err := s.read(func(ctx context.Context, tx pgx.Tx) error {
		if _, err := gardenByID(ctx, tx, gardenID); err != nil {
			return err
		}
		var err error
		out, err = guidanceOf(ctx, tx, gardenID)
		return err
	})
	return out, err
}

// SetGuidance replaces the garden's guidance and evaluates its alerts again
// (store.AlertStore). The garden's beds are locked in id order, as a reading locks
// its bed, so evaluation and readings take turns.
func (s *Store) SetGuidance(gardenID uint64, g store.Guidance) (store.Guidance, store.Recorded, error) {
	g = g.Normalize()
	if err := g.Validate(); err != nil {
		return store.Guidance{}, store.Recorded{}, err
	}
	doc, err := json.Marshal(g)
	if err != nil {
		return store.Guidance{}, store.Recorded{}, err
	}
	var rec store.Recorded
	err = s.write(func(ctx context.Context, tx pgx.Tx) error {
		rec = store.Recorded{}
		now := ts(s.now())
		var company uint64
		err := tx.QueryRow(ctx, `SELECT company_id FROM gardens WHERE id = $1 FOR KEY SHARE`, gardenID).Scan(&company)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("garden %d: %w", gardenID, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT id FROM beds WHERE garden_id = $1 ORDER BY id FOR NO KEY UPDATE`, gardenID)
		if err != nil {
			return err
		}
		beds, err := pgx.CollectRows(rows, pgx.RowTo[uint64])
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO guidance (garden_id, doc) VALUES ($1, $2)
			ON CONFLICT (garden_id) DO UPDATE SET doc = excluded.doc`, gardenID, doc); err != nil {
			return err
		}
		if err := recordChange(ctx, tx, now, store.KindGuidance, gardenID, company, false); err != nil {
			return err
		}
		var plan store.AlertPlan
		for _, bedID := range beds {
			series, err := seriesOfBed(ctx, tx, bedID)
			if err != nil {
				return err
			}
			open, err := openAlertsOfBed(ctx, tx, bedID)
			if err != nil {
				return err
			}
			name := series[""].name
			for plant, row := range series {
				if row.state.Gone {
					continue
				}
				sub := store.AlertSubject{Garden: gardenID, Bed: bedID, BedName: name, Plant: plant, Species: row.state.Species}
				plan.Add(store.PlanAlerts(g.Thresholds, sub, open[plant], row.state.Values, now, false))
			}
		}
		return applyAlertPlan(ctx, tx, now, plan, &rec)
	})
	if err != nil {
		return store.Guidance{}, store.Recorded{}, err
	}
	return g, rec, nil
}

// AcquireLease takes or renews a lease (store.LeaseStore) in one statement: the row
// is taken over only when it is node's or its time ran out.
func (s *Store) AcquireLease(name, node string, ttl time.Duration) (bool, error) {
	if err := store.ValidateLease(name, node, ttl); err != nil {
		return false, err
	}
	var held bool
	err := s.do(func(ctx context.Context) error {
		now := ts(s.now())
		var holder string
		err := s.pool.QueryRow(ctx, `INSERT INTO leases (name, node, until) VALUES ($1, $2, $3)
			ON CONFLICT (name) DO UPDATE SET node = excluded.node, until = excluded.until
			WHERE leases.node = excluded.node OR leases.until <= $4
			RETURNING node`, name, node, now.Add(ttl), now).Scan(&holder)
		if errors.Is(err, pgx.ErrNoRows) {
			held = false
			return nil
		}
		held = err == nil
		return err
	})
	return held, err
}

// ReleaseLease ends node's hold of a lease (store.LeaseStore).
func (s *Store) ReleaseLease(name, node string) error {
	if err := store.ValidateLease(name, node, time.Second); err != nil {
		return err
	}
	return s.do(func(ctx context.Context) error {
		_, err := s.pool.Exec(ctx, `DELETE FROM leases WHERE name = $1 AND node = $2`, name, node)
		return err
	})
}

package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gardend/gardend/store"
)

var _ store.ChangeFeed = (*Store)(nil)

// changeLock is the advisory lock a transaction takes before it appends to the change
// feed and holds until it commits: appends are serialised, so a change's sequence
// follows every change committed before it, and a reader that sees sequence n has
// seen every change below it ("gardend-changes").
const changeLock int64 = 0x67617264636867

// recordChange appends a change of a record homed here when the feed is on: one
// statement, which takes changeLock only then. Write methods call it last in their
// transaction, so the lock is held for the commit only.
func recordChange(ctx context.Context, tx pgx.Tx, now time.Time, kind string, id, ref uint64, deleted bool) error {
	if !store.IsLocal(id) {
		return nil
	}
	_, err := tx.Exec(ctx, `WITH feed AS (SELECT pg_advisory_xact_lock($6) FROM meta WHERE name = 'change_feed')
		INSERT INTO changes (kind, id, ref, deleted, at) SELECT $1, $2, $3, $4, $5 FROM feed`,
		kind, id, ref, deleted, ts(now), changeLock)
	return err
}

// recordChanges appends changes of kind, one per (ids[i], refs[i]) homed here, in
// that order, in one statement.
func recordChanges(ctx context.Context, tx pgx.Tx, now time.Time, kind string, ids, refs []uint64) error {
	var li, lr []int64
	for i, id := range ids {
		if store.IsLocal(id) {
			li, lr = append(li, int64(id)), append(lr, int64(refs[i]))
		}
	}
	if len(li) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `WITH feed AS (SELECT pg_advisory_xact_lock($5) FROM meta WHERE name = 'change_feed')
		INSERT INTO changes (kind, id, ref, deleted, at)
		SELECT $1, u.id, u.ref, false, $4 FROM feed, unnest($2::bigint[], $3::bigint[]) WITH ORDINALITY AS u(id, ref, n) ORDER BY u.n`,
		kind, li, lr, ts(now), changeLock)
	return err
}

// snapshotSQL selects (id, ref) of every record of each kind homed here, in id order.
var snapshotSQL = map[string]string{
	store.KindUser:              `SELECT id, 0 FROM users WHERE id < $1 ORDER BY id`,
	store.KindCompany:           `SELECT id, 0 FROM companies WHERE id < $1 ORDER BY id`,
	store.KindGarden:            `SELECT id, company_id FROM gardens WHERE id < $1 ORDER BY id`,
	store.KindGardenImage:       `SELECT id, company_id FROM gardens WHERE id < $1 AND image_path IS NOT NULL ORDER BY id`,
	store.KindBed:               `SELECT id, garden_id FROM beds WHERE id < $1 ORDER BY id`,
	store.KindCompanyPermission: `SELECT company_id, user_id FROM company_permissions WHERE company_id < $1 ORDER BY id`,
	store.KindGardenPermission:  `SELECT garden_id, user_id FROM garden_permissions WHERE garden_id < $1 ORDER BY id`,
	store.KindBedValues:         `SELECT bed_id, garden_id FROM bed_values WHERE bed_id < $1 ORDER BY bed_id`,
	store.KindLog:               `SELECT id, garden_id FROM logs WHERE id < $1 ORDER BY id`,
	store.KindPhoto:             `SELECT id, log_id FROM photos WHERE id < $1 ORDER BY id`,
	store.KindHistory: `SELECT DISTINCT s.bed_id, c.day::bigint << 5 | 24 FROM history_chunks c JOIN history_series s ON s.id = c.series
		WHERE s.bed_id < $1 ORDER BY 1, 2`,
	store.KindAlert:    `SELECT id, garden_id FROM alerts WHERE id < $1 ORDER BY id`,
	store.KindGuidance: `SELECT g.garden_id, d.company_id FROM guidance g JOIN gardens d ON d.id = g.garden_id WHERE g.garden_id < $1 ORDER BY 1`,
}

// StartChangeFeed turns the feed on; the first time, the same transaction appends a
// change for every record homed here.
func (s *Store) StartChangeFeed() (started bool, err error) {
	err = s.write(func(ctx context.Context, tx pgx.Tx) error {
		started = false
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, changeLock); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO meta (name, value) VALUES ('change_feed', '\x01') ON CONFLICT (name) DO NOTHING`)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		started = true
		now := ts(s.now())
		for _, kind := range store.SnapshotKinds {
			q, ok := snapshotSQL[kind]
			if !ok {
				return fmt.Errorf("snapshot: unknown kind %q", kind)
			}
			// The identity follows the order the rows are inserted in.
			if _, err := tx.Exec(ctx, `INSERT INTO changes (kind, id, ref, at) SELECT $2, k.* , $3 FROM (`+
				q+`) AS k`, store.LocalIDLimit, kind, now); err != nil {
				return fmt.Errorf("snapshot of %s: %w", kind, err)
			}
		}
		return nil
	})
	return started, err
}

// ChangesAfter returns up to limit changes above after, in order.
func (s *Store) ChangesAfter(after uint64, limit int) ([]store.Change, error) {
	var out []store.Change
	err := s.do(func(ctx context.Context) error {
		rows, err := s.pool.Query(ctx, `SELECT seq, kind, id, ref, deleted, at FROM changes
			WHERE seq > $1 ORDER BY seq LIMIT $2`, after, limit)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (c store.Change, err error) {
			err = r.Scan(&c.Seq, &c.Kind, &c.ID, &c.Ref, &c.Deleted, &c.At)
			c.At = c.At.UTC()
			return c, err
		})
		return err
	})
	return out, err
}

// TrimChanges deletes the changes up to and including seq.
func (s *Store) TrimChanges(seq uint64) (int, error) {
	var n int64
	err := s.do(func(ctx context.Context) error {
		tag, err := s.pool.Exec(ctx, `DELETE FROM changes WHERE seq <= $1`, seq)
		n = tag.RowsAffected()
		return err
	})
	return int(n), err
}

// CompactChanges deletes every change above after that repeats an earlier one above
// after.
func (s *Store) CompactChanges(after uint64) (int, error) {
	var n int64
	err := s.do(func(ctx context.Context) error {
		tag, err := s.pool.Exec(ctx, `DELETE FROM changes c WHERE c.seq > $1 AND EXISTS (
			SELECT 1 FROM changes d WHERE d.seq > $1 AND d.seq < c.seq
				AND d.kind = c.kind AND d.id = c.id AND d.ref = c.ref)`, after)
		n = tag.RowsAffected()
		return err
	})
	return int(n), err
}

// ChangeStats describes the feed.
func (s *Store) ChangeStats() (store.ChangeStats, error) {
	var st store.ChangeStats
	err := s.read(func(ctx context.Context, tx pgx.Tx) error {
		var oldest *time.Time
		var last *int64
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM meta WHERE name = 'change_feed'),
				(SELECT count(*) FROM changes), (SELECT at FROM changes ORDER BY seq LIMIT 1),
				pg_sequence_last_value(pg_get_serial_sequence('changes', 'seq'))`).Scan(&st.On, &st.Records, &oldest, &last); err != nil {
			return err
		}
		if oldest != nil {
			st.Oldest = oldest.UTC()
		}
		if last != nil {
			st.LastSeq = uint64(*last)
		}
		return nil
	})
	return st, err
}

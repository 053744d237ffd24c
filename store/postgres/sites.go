package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gardend/gardend/store"
)

var _ store.SiteStore = (*Store)(nil)

const siteColumns = `number, name, user_key, created, removed, last_contact, backlog_records, backlog_bytes, oldest_unsent`

func scanSite(row pgx.Row) (store.Site, error) {
	var st store.Site
	err := row.Scan(&st.Number, &st.Name, &st.UserKey, &st.Created, &st.Removed, &st.LastContact,
		&st.BacklogRecords, &st.BacklogBytes, &st.OldestUnsent)
	st.Created = st.Created.UTC()
	for _, t := range []**time.Time{&st.Removed, &st.LastContact, &st.OldestUnsent} {
		if *t != nil {
			u := (*t).UTC()
			*t = &u
		}
	}
	return st, err
}

// siteLock serialises registrations, which pick the lowest free number
// ("gardend-sites").
const siteLock int64 = 0x67617264736974

// CreateSite registers a site under the lowest free number from 2 on.
func (s *Store) CreateSite(name, userKey string) (store.Site, error) {
	if err := store.ValidateSiteName(name); err != nil {
		return store.Site{}, err
	}
	var st store.Site
	err := s.write(func(ctx context.Context, tx pgx.Tx) (err error) {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, siteLock); err != nil {
			return err
		}
		st, err = scanSite(tx.QueryRow(ctx, `INSERT INTO sites (number, name, user_key, created)
			SELECT n, $1, $2, $3 FROM generate_series(2, $4) n
			WHERE NOT EXISTS (SELECT 1 FROM sites WHERE number = n) ORDER BY n LIMIT 1
			RETURNING `+siteColumns, name, userKey, ts(s.now()), store.MaxSite))
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("%w: all %d site numbers are taken", store.ErrConflict, store.MaxSite-1)
		case isUnique(err):
			return fmt.Errorf("%w: a site named %q exists (removed sites keep their names)", store.ErrConflict, name)
		}
		return err
	})
	return st, err
}

// Sites lists the registered sites by number.
func (s *Store) Sites() ([]store.Site, error) {
	var out []store.Site
	err := s.do(func(ctx context.Context) error {
		rows, err := s.pool.Query(ctx, `SELECT `+siteColumns+` FROM sites WHERE number > 1 ORDER BY number`)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Site, error) { return scanSite(r) })
		if out == nil {
			out = []store.Site{}
		}
		return err
	})
	return out, err
}

// RemoveSite marks the site removed.
func (s *Store) RemoveSite(name string) (store.Site, error) {
	var st store.Site
	err := s.do(func(ctx context.Context) (err error) {
		st, err = scanSite(s.pool.QueryRow(ctx, `UPDATE sites SET removed = coalesce(removed, $2), lease_node = '', lease_until = NULL
			WHERE name = $1 AND number > 1 RETURNING `+siteColumns, name, ts(s.now())))
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("site %q: %w", name, store.ErrNotFound)
		}
		return err
	})
	return st, err
}

// ReportSite records what the site said when it made contact.
func (s *Store) ReportSite(number uint32, r store.SiteReport) error {
	var oldest *time.Time
	if r.OldestUnsent != nil {
		t := ts(*r.OldestUnsent)
		oldest = &t
	}
	return s.do(func(ctx context.Context) error {
		_, err := s.pool.Exec(ctx, `UPDATE sites SET last_contact = greatest(last_contact, $2),
			backlog_records = $3, backlog_bytes = $4, oldest_unsent = $5 WHERE number = $1 AND number > 1`,
			number, ts(r.At), r.BacklogRecords, r.BacklogBytes, oldest)
		return err
	})
}

// LeaseSite makes node the applier of the site until the lease runs out, by the
// database's clock.
func (s *Store) LeaseSite(number uint32, node string, d time.Duration) (bool, error) {
	var held bool
	err := s.do(func(ctx context.Context) error {
		tag, err := s.pool.Exec(ctx, `UPDATE sites SET lease_node = $2, lease_until = now() + make_interval(secs => $3)
			WHERE number = $1 AND removed IS NULL AND (lease_node = $2 OR lease_until IS NULL OR lease_until < now())`,
			number, node, d.Seconds())
		held = tag.RowsAffected() == 1
		return err
	})
	return held, err
}

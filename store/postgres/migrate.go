package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// migrationFiles are the schema versions, NNNN_name.sql, applied in order. Append
// only: a released migration is never edited.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLock is the advisory-lock key that serialises migrations across nodes
// starting at once ("gardend" in ASCII).
const migrationLock int64 = 0x67617264656e64

// dataSteps complete the migration of a version with what SQL cannot compute, in its
// transaction, right after its file ran. Append only, like the files.
var dataSteps = map[int]func(ctx context.Context, tx pgx.Tx) error{
	3: reindexUsernameLooks, // users.go
}

// lookIndexVersion is the confusables release the newest look data step indexes with
// (store.ConfusablesVersion when it ran): a newer table needs a migration that
// re-indexes.
const lookIndexVersion = "15.0.0"

type migration struct {
	version int
	name    string
	sql     string
}

func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		num, name, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration file %s: want NNNN_name.sql", e.Name())
		}
		data, err := migrationFiles.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: name, sql: string(data)})
	}
	slices.SortFunc(out, func(a, b migration) int { return a.version - b.version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %04d_%s: versions must run 1, 2, 3, … without gaps", m.version, m.name)
		}
	}
	return out, nil
}

// SchemaVersion is the schema version this build writes.
func SchemaVersion() uint64 {
	ms, err := migrations()
	if err != nil {
		panic(err) // the embedded files are part of the build
	}
	return uint64(len(ms))
}

// migrate applies pending migrations in one transaction under a transaction-scoped
// advisory lock: nodes starting together wait for the first, then find nothing to
// do. DDL is transactional in PostgreSQL, so a failed migration leaves the previous
// version whole.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, max(s.timeout, 30*time.Second))
	defer cancel()
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// Nodes starting together wait here for the first one's migration.
		if err := unbounded(ctx, tx, lockingIdle); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version integer PRIMARY KEY,
			name    text NOT NULL,
			applied timestamptz NOT NULL DEFAULT now())`); err != nil {
			return err
		}
		var current int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
			return err
		}
		s.created = current == 0
		if current > len(ms) {
			return fmt.Errorf("database schema version %d is newer than this gardend (%d): upgrade gardend", current, len(ms))
		}
		for _, m := range ms[current:] {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("migrate schema %d → %d (%s): %w", m.version-1, m.version, m.name, err)
			}
			if step := dataSteps[m.version]; step != nil {
				if err := step(ctx, tx); err != nil {
					return fmt.Errorf("migrate schema %d → %d (%s, data): %w", m.version-1, m.version, m.name, err)
				}
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
				return err
			}
		}
		return nil
	})
	return s.classify(err)
}

// schemaVersion reads the applied version.
func (s *Store) schemaVersion(ctx context.Context, q querier) (uint64, error) {
	var v uint64
	err := q.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v)
	return v, err
}

// querier is a pool or a transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

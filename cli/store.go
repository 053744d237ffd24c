package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/gardend/gardend/server/backup"
	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/bolt"
	"github.com/gardend/gardend/store/postgres"
)

// The database every command works on is --store (GARDEND_STORE, or store = … in the
// config file): empty for the bbolt file in the data directory, the default, or a
// PostgreSQL URL for a database that any number of nodes share. Only this file knows
// the backends; everything else uses the interfaces of package store.

const storeFlagHelp = `database: empty for the bbolt file in --data, or a PostgreSQL URL
(postgres://user:password@host:5432/dbname?sslmode=verify-full) shared by every node`

// postgresDSN returns the --store value when it names a PostgreSQL database.
func (g *globalOptions) postgresDSN() (string, bool) {
	v := strings.TrimSpace(g.store)
	return v, strings.HasPrefix(v, "postgres://") || strings.HasPrefix(v, "postgresql://")
}

// checkStore refuses a --store value that names no backend.
func (g *globalOptions) checkStore() error {
	if _, pg := g.postgresDSN(); pg || strings.TrimSpace(g.store) == "" {
		return nil
	}
	return fmt.Errorf("--store %s: give a postgres:// URL for PostgreSQL, or leave it empty for the bbolt file in --data", redactDSN(g.store))
}

// describeStore names the store for messages, with any password masked.
func (g *globalOptions) describeStore() string {
	if dsn, pg := g.postgresDSN(); pg {
		return "PostgreSQL " + redactDSN(dsn)
	}
	return filepath.Join(g.dataDir, bolt.FileName)
}

// redactDSN masks every password of a connection string, whatever form carries it
// (postgres.RedactDSN).
func redactDSN(dsn string) string { return postgres.RedactDSN(dsn) }

// boltPath is the bbolt database of the data directory.
func (g *globalOptions) boltPath() string { return filepath.Join(g.dataDir, bolt.FileName) }

// openStore opens the configured database for a command that works in this process:
// serve, or an admin operation no server answers on the socket. A bbolt file is opened
// only while no restore is pending or running in the data directory (backup.Guard:
// on a half-restored directory it would open, or create, a database that does not
// match the files beside it), and fails within a second when another process holds
// it. created reports that the database did not exist before. now is the clock (nil:
// time.Now); log, when set, hears what opening did (a migration's backup copy).
func openStore(ctx context.Context, g *globalOptions, now func() time.Time, log *zerolog.Logger) (st store.Backend, created bool, err error) {
	if err := g.checkStore(); err != nil {
		return nil, false, err
	}
	if dsn, pg := g.postgresDSN(); pg {
		p, err := postgres.Open(ctx, dsn, postgres.Options{Now: now})
		if err != nil {
			return nil, false, fmt.Errorf("open %s: %w", g.describeStore(), err)
		}
		return p, p.Created(), nil
	}
	path := g.boltPath()
	var b *bolt.Store
	err = backup.Guard(g.dataDir, func() (err error) {
		_, statErr := os.Stat(path)
		created = errors.Is(statErr, fs.ErrNotExist)
		b, err = bolt.Open(path, bolt.Options{Now: now})
		return err
	})
	if err != nil {
		return nil, false, err
	}
	if copied := b.MigrationBackup(); copied != "" && log != nil {
		log.Info().Str("copy", copied).Uint64("schema", bolt.SchemaVersion()).Msg("database schema migrated; the file was copied before (delete the copy once all is well)")
	}
	return b, created, nil
}

// OpenStore opens the database a command would: the bbolt file in dataDir when dsn
// is empty (refused while a restore is pending there), else the PostgreSQL database
// dsn names. created reports a database that did not exist before. For tests and
// programs that run a server.Server themselves.
func OpenStore(ctx context.Context, dataDir, dsn string, now func() time.Time) (st store.Backend, created bool, err error) {
	return openStore(ctx, &globalOptions{dataDir: dataDir, store: dsn}, now, nil)
}

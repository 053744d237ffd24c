// Package postgres keeps gardend's records in PostgreSQL, so that any number of
// gardend nodes can share one database and hold no state of their own. It implements
// the interfaces of package store with the same semantics as the bbolt backend; the
// contract suite in store/storetest runs against both.
//
// Every operation runs under a deadline (Options.OpTimeout): a database that is down
// or unreachable gives an error wrapping store.ErrUnavailable within that time, never
// a hang, and the pool reconnects by itself once the database is back.
//
// There is no user cache: authentication is one query joining the token to its user,
// which a cache could not save (the token must be looked up at every request so that a
// logout on one node revokes it on all), and without a cache no node can serve a user
// record another node has changed.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gardend/gardend/store"
)

// Options tune Open. The zero value is usable.
type Options struct {
	// Now is the clock used for timestamps, expiry and leases; time.Now when nil.
	// Nodes sharing a database should keep their clocks synchronised (NTP).
	Now func() time.Time
	// OpTimeout bounds each operation, waiting for a connection included; 5 s when 0.
	OpTimeout time.Duration
	// MaxConns bounds the connection pool; when 0, the DSN's pool_max_conns
	// parameter, else 16.
	MaxConns int32
}

// Default limits.
const (
	DefaultOpTimeout = 5 * time.Second
	DefaultMaxConns  = 16
)

// Store is an open PostgreSQL database.
type Store struct {
	pool    *pgxpool.Pool
	now     func() time.Time
	timeout time.Duration
	// hook, when set by a test, runs at the named points of an operation.
	hook func(point string)
	// observe, when set, is told how long each transaction took (ObserveTx).
	observe func(write bool, d time.Duration)
	// created: Open found no schema and made it.
	created bool
	// secrets are the passwords of the connection string, scrubbed from errors.
	secrets []string
}

var (
	_ store.Backend    = (*Store)(nil)
	_ store.Shared     = (*Store)(nil)
	_ store.TxObserver = (*Store)(nil)
)

// ObserveTx sets what is told how long each transaction took; call it before the
// store is shared between goroutines.
func (s *Store) ObserveTx(fn func(write bool, d time.Duration)) { s.observe = fn }

// Open connects to the database named by dsn (a postgres:// URL or key=value
// string), applies pending migrations under an advisory lock, and returns the store.
// A database that cannot be reached fails with store.ErrUnavailable.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.OpTimeout <= 0 {
		opts.OpTimeout = DefaultOpTimeout
	}
	explicitPool := strings.Contains(dsn, "pool_max_conns=")
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx quotes the string with its own, best-effort redaction: quote ours.
		var pe *pgconn.ParseConfigError
		if errors.As(err, &pe) {
			pe.ConnString = RedactDSN(pe.ConnString)
		}
		return nil, fmt.Errorf("%w: PostgreSQL connection string: %v", store.ErrInvalid, scrubbed(err, secretsOf(dsn)))
	}
	secrets := secretsOf(dsn, cfg.ConnConfig.Password)
	switch {
	case opts.MaxConns > 0:
		cfg.MaxConns = opts.MaxConns
	case !explicitPool:
		cfg.MaxConns = DefaultMaxConns
	}
	cfg.MinConns = 0
	cfg.MaxConnIdleTime = 5 * time.Minute
	cfg.HealthCheckPeriod = 30 * time.Second
	if cfg.ConnConfig.ConnectTimeout == 0 || cfg.ConnConfig.ConnectTimeout > opts.OpTimeout {
		cfg.ConnConfig.ConnectTimeout = opts.OpTimeout
	}
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "gardend"
	}
	if set := sessionLimits(opts.OpTimeout, cfg.ConnConfig.RuntimeParams); set != "" {
		cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
			_, err := conn.Exec(ctx, set)
			return err
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, scrubbed(fmt.Errorf("open PostgreSQL pool: %w", err), secrets)
	}
	s := &Store{pool: pool, now: opts.Now, timeout: opts.OpTimeout, secrets: secrets}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// Created reports that Open found the database without gardend's schema and made
// it: a new install.
func (s *Store) Created() bool { return s.created }

// Close closes every connection; operations in flight finish first.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// Now is the store's clock.
func (s *Store) Now() time.Time { return s.now() }

// at runs the test hook for point, if any.
func (s *Store) at(point string) {
	if s.hook != nil {
		s.hook(point)
	}
}

// maxTries bounds the attempts of one transaction that keeps failing with a
// serialization failure or deadlock, or on a connection that died before the query
// was sent.
const maxTries = 5

// read runs fn in a read-only REPEATABLE READ transaction, so that every query of an
// operation sees one snapshot, as a bbolt View does. fn resets what it fills: it may
// run more than once.
func (s *Store) read(fn func(ctx context.Context, tx pgx.Tx) error) error {
	return s.inTx(context.Background(), pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn)
}

// write runs fn in a READ COMMITTED read-write transaction. Operations that check and
// then write take row locks in fn (see each for which and why) instead of running
// SERIALIZABLE: a lock waits where serializable would abort and retry, and cannot
// fail on an unrelated row that shares an index page. fn may run more than once.
func (s *Store) write(fn func(ctx context.Context, tx pgx.Tx) error) error {
	return s.writeCtx(context.Background(), fn)
}

// writeCtx is write under parent as well as the operation deadline.
func (s *Store) writeCtx(parent context.Context, fn func(ctx context.Context, tx pgx.Tx) error) error {
	return s.inTx(parent, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, fn)
}

func (s *Store) inTx(parent context.Context, opts pgx.TxOptions, fn func(ctx context.Context, tx pgx.Tx) error) error {
	if s.observe != nil {
		defer func(start time.Time) { s.observe(opts.AccessMode != pgx.ReadOnly, time.Since(start)) }(time.Now())
	}
	return s.doCtx(parent, func(ctx context.Context) error {
		tx, err := s.pool.BeginTx(ctx, opts)
		if err != nil {
			return err
		}
		if err := fn(ctx, tx); err != nil {
			_ = tx.Rollback(ctx) // fn's error says more; a failed rollback closes the connection
			return err
		}
		return s.commit(ctx, tx, opts.AccessMode == pgx.ReadOnly)
	})
}

// do runs a single statement (or a few that need no common snapshot) under the
// operation deadline. fn may run more than once, also after a run whose statements
// took effect but whose answer was lost: it must be a read, or a write that leaves
// the same state and reports the same result when applied again (an upsert, a delete
// by key, an update to given values). Any other write goes through write, whose
// commit is checked rather than repeated.
func (s *Store) do(fn func(ctx context.Context) error) error {
	return s.doCtx(context.Background(), fn)
}

// doCtx runs fn under parent and the operation deadline, again while it fails in a
// way that is safe to retry (see retryable) and time is left.
func (s *Store) doCtx(parent context.Context, fn func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(parent, s.timeout)
	defer cancel()
	var err error
	for try := 1; ; try++ {
		err = fn(ctx)
		if err == nil || try == maxTries || !retryable(err) || ctx.Err() != nil {
			break
		}
	}
	return s.classify(err)
}

// retryable: a serialization failure or deadlock (the transaction was rolled back and
// may simply run again); an error that happened before anything reached the server;
// or a session the server ended (a restart, a failover, pg_terminate_backend) or
// that died, whose pooled connection is discarded, so the next try takes a fresh
// one. A transaction cut off that way before its COMMIT was sent was rolled back; one
// whose COMMIT went out and whose answer was lost is not retried blindly: commit asks
// the database what became of it (commit.go), and only a transaction it says was
// aborted runs again.
func retryable(err error) bool {
	var (
		unknown *commitUnknownError
		aborted *abortedError
	)
	switch {
	case errors.As(err, &unknown):
		return false
	case errors.As(err, &aborted):
		return true
	}
	switch code := sqlState(err); {
	case code == "40001", code == "40P01", code == "57P01", code == "57P02", code == "57P03":
		return true
	case strings.HasPrefix(code, "08"):
		return true
	case code != "":
		return false
	}
	var ne net.Error
	return pgconn.SafeToRetry(err) || errors.As(err, &ne) && !ne.Timeout() ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// classify turns errors that say the database cannot be used now into
// store.ErrUnavailable; domain errors and anything else pass unchanged.
func (s *Store) classify(err error) error {
	if code := sqlState(err); code == "22021" || code == "22P05" {
		// The rules (store.CleanText) keep such text out; should some get past them,
		// it is the input's fault, said without the database's words.
		return fmt.Errorf("%w: the text holds a character PostgreSQL cannot store (U+0000 or invalid UTF-8)", store.ErrInvalid)
	}
	if err == nil || !unavailable(err) {
		return scrubbed(err, s.secrets)
	}
	if errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) {
		return scrubbed(fmt.Errorf("%w: no answer within %s: %v", store.ErrUnavailable, s.timeout, err), s.secrets)
	}
	return scrubbed(fmt.Errorf("%w: %v", store.ErrUnavailable, err), s.secrets)
}

func unavailable(err error) bool {
	var unknown *commitUnknownError
	if errors.As(err, &unknown) {
		return true
	}
	if code := sqlState(err); code != "" {
		// 08: connection exception; 53: insufficient resources (too many connections,
		// disk full); 57: operator intervention (shutdown, cannot connect now,
		// statement timeout); 40: a transaction that kept failing to serialize.
		switch code[:2] {
		case "08", "53", "57", "40":
			return true
		}
		return false
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) ||
		errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || pgconn.SafeToRetry(err)
}

// isUnique reports a unique-constraint violation.
func isUnique(err error) bool { return sqlState(err) == "23505" }

// isForeignKey reports a foreign-key violation: the row referred to is gone.
func isForeignKey(err error) bool { return sqlState(err) == "23503" }

// ts is a timestamp as PostgreSQL keeps it (microseconds), in UTC.
func ts(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

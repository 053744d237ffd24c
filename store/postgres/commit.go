package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A COMMIT whose answer is lost (the connection drops after the server got it) may
// have taken effect or not. Running the transaction again would apply a write twice
// when it had: two companies for one POST, or "username taken" for the request that
// took it. So a write transaction reads its transaction id before it commits, and
// when the COMMIT's answer does not come, commit asks the database on another
// connection what became of that id (pg_xact_status, PostgreSQL 13 and later):
// committed is success, aborted is safe to run again, and no answer in time is
// ErrUnavailable without a retry.

// resolveMin is the least time commit gives itself to learn a lost COMMIT's outcome,
// even when the operation's deadline is (nearly) over: an answer "not saved" the
// client would act on must be true.
const resolveMin = 2 * time.Second

// commitUnknownError is a COMMIT whose outcome the database did not tell in time. It
// is never retried, and reads as ErrUnavailable.
type commitUnknownError struct{ cause error }

func (e *commitUnknownError) Error() string {
	return fmt.Sprintf("the database did not confirm whether the change was saved: %v", e.cause)
}

func (e *commitUnknownError) Unwrap() error { return e.cause }

// abortedError is a COMMIT whose answer was lost and that the database says did not
// take effect: the transaction runs again.
type abortedError struct{ cause error }

func (e *abortedError) Error() string {
	return fmt.Sprintf("the connection was lost at commit and the transaction rolled back: %v", e.cause)
}

func (e *abortedError) Unwrap() error { return e.cause }

// commit commits tx. A read-only transaction has nothing to lose. A write reads its
// transaction id first (none: it wrote nothing, and a retry is harmless), and a
// COMMIT that fails in a way that leaves its outcome open is resolved by resolve.
func (s *Store) commit(ctx context.Context, tx pgx.Tx, readOnly bool) error {
	if readOnly {
		return tx.Commit(ctx)
	}
	var xid *string
	if err := tx.QueryRow(ctx, `SELECT pg_current_xact_id_if_assigned()::text`).Scan(&xid); err != nil {
		_ = tx.Rollback(ctx)
		return err
	}
	s.at("before-commit")
	// A connection found closed here never sent the COMMIT: nothing to resolve.
	sent := !tx.Conn().PgConn().IsClosed()
	err := tx.Commit(ctx)
	if err == nil || xid == nil || !sent || !outcomeOpen(err) {
		return err
	}
	return s.resolve(ctx, *xid, err)
}

// outcomeOpen reports whether a failed COMMIT may have taken effect: no ERROR came
// back for it (an ERROR means the server rolled the transaction back; a FATAL ends the
// session at a moment that may be after the commit). pgconn.SafeToRetry is no guide
// here: a connection that reads EOF after the COMMIT went out reports "conn closed",
// which it marks safe to retry.
func outcomeOpen(err error) bool {
	if errors.Is(err, pgx.ErrTxCommitRollback) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Severity != "ERROR"
	}
	return true
}

// resolve asks the database, on a connection of the pool, what became of transaction
// xid whose COMMIT failed with cause: nil when it committed, an abortedError when it
// did not (the caller runs it again), a commitUnknownError when no answer comes
// within the operation's deadline or resolveMin, whichever is later. "in progress"
// lasts until the server has read the COMMIT or found the connection gone (or ended
// the idle session: idle_in_transaction_session_timeout), so it is asked again.
func (s *Store) resolve(ctx context.Context, xid string, cause error) error {
	s.at("commit-lost")
	deadline := time.Now().Add(resolveMin)
	if d, ok := ctx.Deadline(); ok && d.After(deadline) {
		deadline = d
	}
	rctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	defer cancel()
	wait := 5 * time.Millisecond
	for {
		var status *string
		err := s.pool.QueryRow(rctx, `SELECT pg_xact_status($1::xid8)`, xid).Scan(&status)
		switch {
		case err == nil && status != nil && *status == "committed":
			return nil
		case err == nil && status != nil && *status == "aborted":
			return &abortedError{cause: cause}
		case err == nil && status == nil:
			// Too old to be known: cannot happen within seconds, but never guess.
			return &commitUnknownError{cause: cause}
		}
		t := time.NewTimer(wait)
		select {
		case <-rctx.Done():
			t.Stop()
			return &commitUnknownError{cause: cause}
		case <-t.C:
		}
		wait = min(2*wait, 200*time.Millisecond)
	}
}

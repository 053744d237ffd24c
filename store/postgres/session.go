package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// The database itself bounds what a session may hold, so that a node that stops
// answering (paused, swapped out, cut off) cannot hold row locks that every other
// node's writes wait behind until their own deadlines pass:
//
//   - idle_in_transaction_session_timeout ends a session that sits in a transaction
//     without sending anything; its locks go and the others go on. gardend never
//     waits for anything but the database inside a transaction, so an idle one is a
//     node that stopped. A transaction ended so, before its COMMIT, runs again.
//   - lock_timeout and statement_timeout end a wait for a lock, or a statement, that
//     the node gave up on (its operation deadline passed) but could not cancel.
//
// Each is set when a connection opens (AfterConnect rather than start-up parameters,
// which connection poolers may refuse), unless the DSN sets it. Export, Import and
// migrations, which run as long as their data needs, lift them for their
// transaction (unbounded), but for the idleness of those that lock what every node
// needs: a restore or a migrating node that stops must not hold that for ever.

// sessionLimits is the SET statement of a new connection for operations bounded by
// opTimeout, leaving out the settings in params (the DSN's).
func sessionLimits(opTimeout time.Duration, params map[string]string) string {
	idle := max(opTimeout/2, time.Second)
	var sets []string
	for _, l := range []struct {
		name  string
		value time.Duration
	}{
		{"idle_in_transaction_session_timeout", idle},
		{"lock_timeout", opTimeout},
		{"statement_timeout", opTimeout},
	} {
		if _, ok := params[l.name]; !ok {
			sets = append(sets, fmt.Sprintf("SET %s = %d", l.name, l.value.Milliseconds()))
		}
	}
	return strings.Join(sets, "; ")
}

// unbounded lifts the session limits for the rest of tx: an export, an import or a
// migration takes as long as its data, bounded by its context. idle (0: none) bounds
// how long tx may sit idle.
func unbounded(ctx context.Context, tx pgx.Tx, idle time.Duration) error {
	_, err := tx.Exec(ctx, fmt.Sprintf(`SET LOCAL idle_in_transaction_session_timeout = %d; SET LOCAL lock_timeout = 0; SET LOCAL statement_timeout = 0`, idle.Milliseconds()))
	return err
}

// lockingIdle bounds the idleness of the long transactions that lock what every node
// needs (an import the users and companies tables, a migration the schema): their
// client never waits long between statements, unless it stopped.
const lockingIdle = time.Minute

package server

import (
	"context"
	"errors"
	"time"

	"github.com/gardend/gardend/store"
)

// decoyRefresh is how often the kinds of stored hash are read again: an import (which
// PostgreSQL nodes may see while they serve) adds kinds, first logins of imported
// users retire them.
const decoyRefresh = 10 * time.Minute

// refreshDecoy makes the check that logins without a hash to check run (checkLogin)
// cost as much as the slowest kind of hash the accounts still hold: otherwise an
// unknown username answers as fast as gardend's own argon2id while an imported
// PlantMap user, until their first login, answers after a slower pbkdf2 check, which
// tells who was imported. When the store cannot say, the decoy stays as it was (at
// first: gardend's own kind).
func (s *Server) refreshDecoy() {
	kinds, err := s.store.PasswordHashKinds()
	if err != nil {
		if s.decoy.Load() == nil {
			d := s.pw.DefaultDecoy()
			s.decoy.Store(&d)
		}
		s.log.Warn().Err(err).Msg("read the kinds of stored password hash; the decoy of unknown usernames stays as it was")
		return
	}
	d := s.pw.SlowestDecoy(kinds)
	if old := s.decoy.Swap(&d); old == nil || old.Kind() != d.Kind() {
		s.log.Info().Str("kind", d.Kind()).Float64("logins", d.Cost()).Msg("logins of unknown usernames cost as much as the slowest kind of stored hash")
	}
}

func (s *Server) refreshDecoyEvery(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.refreshDecoy()
		}
	}
}

// checkLogin checks password against the account who names. A login with no hash to
// check (no such account, or one whose hash is unusable or cannot be checked) runs the
// decoy instead and fails: its answer takes as long as a real check of the slowest
// kind of stored hash. An error means no check ran (the client went away while it
// queued).
func (s *Server) checkLogin(ctx context.Context, who identity, password string) (bool, error) {
	if who.found {
		err := s.pw.Checkable(who.user.PasswordHash)
		if err == nil {
			return s.pw.Verify(ctx, who.user.PasswordHash, password)
		}
		if !errors.Is(err, store.ErrUnusable) {
			s.log.Warn().Err(err).Uint64("user_id", who.user.ID).Msg("password hash not checked; set a new one with gardend user reset-password")
		}
	}
	return false, s.pw.CheckDecoy(ctx, *s.decoy.Load(), password)
}

package server

import (
	"context"

	"github.com/gardend/gardend/store"
)

// upgradePassword replaces a hash gardend keeps only to verify it (one imported from
// PlantMap, store/password_django.go) with its own argon2id, once a login has proved
// the password. It runs after the token is issued, so it never delays or fails the
// login; a failure is logged and the next login tries again.
func (s *Server) upgradePassword(ctx context.Context, u store.User, password string) {
	if !s.pw.NeedsRehash(u.PasswordHash) || !store.IsLocal(u.ID) {
		return // a replica's hash is its home's to upgrade
	}
	hash, err := s.pw.Hash(ctx, password)
	if err != nil {
		s.log.Warn().Err(err).Uint64("user_id", u.ID).Msg("upgrade an imported password hash")
		return
	}
	replaced, err := s.store.ReplacePasswordHash(u.ID, u.PasswordHash, hash)
	switch {
	case err != nil:
		s.log.Warn().Err(err).Uint64("user_id", u.ID).Msg("upgrade an imported password hash")
	case replaced:
		s.log.Info().Uint64("user_id", u.ID).Msg("imported password hash upgraded to argon2id")
	}
}

package server

import (
	"context"
	"errors"

	"github.com/gardend/gardend/store"
)

// Demo account credentials printed by serve --demo. They are well known on purpose:
// the demo is for trying gardend out on one's own machine.
const (
	DemoUsername = "demo"
	DemoPassword = "demo-gardener"
)

// seedDemo makes sure the demo account exists.
func (s *Server) seedDemo(ctx context.Context) error {
	_, err := s.store.UserByUsername(DemoUsername)
	switch {
	case err == nil:
	case errors.Is(err, store.ErrNotFound):
		hash, err := s.pw.Hash(ctx, DemoPassword)
		if err != nil {
			return err
		}
		if _, err := s.store.CreateUser(store.NewUser{Username: DemoUsername, FirstName: "Demo", LastName: "Gardener", PasswordHash: hash}); err != nil {
			return err
		}
	default:
		return err
	}
	s.log.Info().Str("username", DemoUsername).Str("password", DemoPassword).Msg("demo account ready: log in with these credentials")
	return nil
}

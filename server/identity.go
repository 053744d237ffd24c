package server

import (
	"errors"
	"strconv"

	"github.com/gardend/gardend/store"
)

// identity is who a typed username names: the account the store finds for it, and the
// key that whatever is counted per account (failed logins) counts under. One call
// makes both, so the limit can never be keyed on another spelling than the lookup
// resolves: ｖictim, vi𝐜tim and ｖｉｃｔｉｍ find victim's account, so they spend
// victim's budget.
type identity struct {
	user  store.User
	found bool
	// key is "id:N" for an account, else "name:" and the name in the form the lookup
	// normalises it to (store.NormalizeUsername): a name no account has yet shares one
	// budget across its spellings too.
	key string
}

// identify resolves typed as the store's lookup (UserByUsername) does.
func (s *Server) identify(typed string) (identity, error) {
	u, err := s.store.UserByUsername(typed)
	switch {
	case err == nil:
		return identity{user: u, found: true, key: "id:" + strconv.FormatUint(u.ID, 10)}, nil
	case errors.Is(err, store.ErrNotFound):
		return identity{key: "name:" + store.NormalizeUsername(typed)}, nil
	}
	return identity{}, err
}

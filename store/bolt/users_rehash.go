package bolt

import (
	bbolt "go.etcd.io/bbolt"

	"github.com/gardend/gardend/store"
)

// ReplacePasswordHash swaps the user's stored hash for a new hash of the same
// password (an imported Django hash upgraded to argon2id after a login verified it).
// It replaces only if the stored hash is still old, so a password change made
// meanwhile wins, and reports whether it replaced. Unlike a password change it keeps
// every token: the password is the same.
func (s *Store) ReplacePasswordHash(userID uint64, old, replacement string) (replaced bool, err error) {
	err = s.updateUser(userID, func(tx *bbolt.Tx, r *userRecord) error {
		replaced = r.PasswordHash == old
		if replaced {
			r.PasswordHash = replacement
			return recordChange(tx, s.now(), store.KindUser, userID, 0, false)
		}
		return nil
	})
	return replaced, err
}

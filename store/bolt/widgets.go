package bolt

import (
	"bytes"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/gardend/gardend/store"
)

// SaveWidgets stores doc byte-for-byte; it must pass store.ValidateWidgets.
func (s *Store) SaveWidgets(userID uint64, doc []byte) error {
	if err := store.ValidateWidgets(doc); err != nil {
		return err
	}
	return s.db.Update(func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketUsers).Get(itob(userID)) == nil {
			return fmt.Errorf("user %d: %w", userID, store.ErrNotFound)
		}
		if err := tx.Bucket(bucketWidgets).Put(itob(userID), doc); err != nil {
			return err
		}
		return recordChange(tx, s.now(), store.KindUser, userID, 0, false)
	})
}

// Widgets returns the stored document, or nil when none was saved.
func (s *Store) Widgets(userID uint64) ([]byte, error) {
	var out []byte
	err := s.db.View(func(tx *bbolt.Tx) error {
		out = bytes.Clone(tx.Bucket(bucketWidgets).Get(itob(userID)))
		return nil
	})
	return out, err
}

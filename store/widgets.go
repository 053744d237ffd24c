package store

import (
	"bytes"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// MaxWidgetsBytes bounds one user's widgets document.
const MaxWidgetsBytes = 64 << 10

// SaveWidgets stores doc byte-for-byte; it must be one valid JSON value.
func (s *Store) SaveWidgets(userID uint64, doc []byte) error {
	trimmed := bytes.TrimSpace(doc)
	switch {
	case len(trimmed) == 0:
		return Invalid("body", "the body must be a JSON value; it is empty")
	case len(doc) > MaxWidgetsBytes:
		return Invalid("body", fmt.Sprintf("widgets must be at most %d bytes", MaxWidgetsBytes))
	case !json.Valid(doc):
		return Invalid("body", "the body is not valid JSON")
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketUsers).Get(itob(userID)) == nil {
			return fmt.Errorf("user %d: %w", userID, ErrNotFound)
		}
		return tx.Bucket(bucketWidgets).Put(itob(userID), doc)
	})
}

// Widgets returns the stored document, or nil when none was saved.
func (s *Store) Widgets(userID uint64) ([]byte, error) {
	var out []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		out = bytes.Clone(tx.Bucket(bucketWidgets).Get(itob(userID)))
		return nil
	})
	return out, err
}

package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"
)

// MaxWidgetsBytes bounds one user's widgets document.
const MaxWidgetsBytes = 64 << 10

// SaveWidgets stores doc byte-for-byte; it must be one valid JSON value, in UTF-8
// (RFC 8259: json.Valid alone lets invalid UTF-8 inside strings through, which would
// then be served labelled charset=utf-8).
func (s *Store) SaveWidgets(userID uint64, doc []byte) error {
	trimmed := bytes.TrimSpace(doc)
	switch {
	case len(trimmed) == 0:
		return Invalid("body", "the body must be a JSON value; it is empty")
	case len(doc) > MaxWidgetsBytes:
		return Invalid("body", fmt.Sprintf("widgets must be at most %d bytes", MaxWidgetsBytes))
	case !utf8.Valid(doc):
		return Invalid("body", fmt.Sprintf("the body is not valid UTF-8 (byte %d); send JSON text in UTF-8", invalidUTF8At(doc)))
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

// invalidUTF8At is the offset of the first byte of b that is not valid UTF-8.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}

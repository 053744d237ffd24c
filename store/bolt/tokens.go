package bolt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/gardend/gardend/store"
)

// tokenRecord is fixed-size binary so authentication decodes without allocating:
// user id, created, expiry (unix nanoseconds), each 8 bytes big-endian.
const tokenRecordSize = 24

func encodeToken(userID uint64, created, expiry time.Time) []byte {
	b := make([]byte, tokenRecordSize)
	binary.BigEndian.PutUint64(b, userID)
	binary.BigEndian.PutUint64(b[8:], uint64(created.UnixNano()))
	binary.BigEndian.PutUint64(b[16:], uint64(expiry.UnixNano()))
	return b
}

func decodeToken(b []byte) (userID uint64, created, expiry time.Time, ok bool) {
	if len(b) != tokenRecordSize {
		return 0, time.Time{}, time.Time{}, false
	}
	return binary.BigEndian.Uint64(b),
		time.Unix(0, int64(binary.BigEndian.Uint64(b[8:]))).UTC(),
		time.Unix(0, int64(binary.BigEndian.Uint64(b[16:]))).UTC(), true
}

// CreateToken stores the digest of a new token for user id, valid until expiry,
// whatever the account's credentials are now. Logins use CreateLoginToken.
func (s *Store) CreateToken(userID uint64, digest [store.DigestSize]byte, expiry time.Time) error {
	if err := store.ValidateTokenDigest(digest); err != nil {
		return err
	}
	return s.db.Update(func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketUsers).Get(itob(userID)) == nil {
			return fmt.Errorf("user %d: %w", userID, store.ErrNotFound)
		}
		return putToken(tx, userID, digest, s.now(), expiry)
	})
}

// CreateLoginToken stores a new token for the account a login checked the password
// of, and sets its last_login, in one transaction: only while the account's password
// hash and credentials generation are still those of verified (read before the
// check). Otherwise, a password change or a logout everywhere committed meanwhile,
// and it is ErrCredentialsChanged with nothing written.
func (s *Store) CreateLoginToken(verified store.User, digest [store.DigestSize]byte, expiry time.Time) error {
	if err := store.ValidateTokenDigest(digest); err != nil {
		return err
	}
	err := s.updateUser(verified.ID, func(tx *bbolt.Tx, r *userRecord) error {
		if r.PasswordHash != verified.PasswordHash || r.CredentialsGen != verified.CredentialsGen {
			return fmt.Errorf("user %d: %w", verified.ID, store.ErrCredentialsChanged)
		}
		now := s.now()
		last := now.UTC().Truncate(time.Microsecond)
		r.LastLogin = &last
		return putToken(tx, verified.ID, digest, now, expiry)
	})
	if errors.Is(err, store.ErrNotFound) {
		// Deleted after the check: its credentials are gone too.
		return fmt.Errorf("user %d: %w", verified.ID, store.ErrCredentialsChanged)
	}
	return err
}

func putToken(tx *bbolt.Tx, userID uint64, digest [store.DigestSize]byte, created, expiry time.Time) error {
	if err := tx.Bucket(bucketTokens).Put(digest[:], encodeToken(userID, created, expiry)); err != nil {
		return err
	}
	return tx.Bucket(bucketUserToks).Put(userTokenKey(userID, digest[:]), nil)
}

func userTokenKey(userID uint64, digest []byte) []byte {
	k := make([]byte, 8+store.DigestSize)
	binary.BigEndian.PutUint64(k, userID)
	copy(k[8:], digest)
	return k
}

// Authenticate resolves a token digest to its user in one read transaction. Unknown
// and expired tokens are ErrUnauthenticated.
func (s *Store) Authenticate(digest [store.DigestSize]byte) (store.User, error) {
	gen := s.users.generation()
	// A manual read transaction instead of View: the closure would move the digest
	// and the user to the heap on the hottest path of the service.
	tx, err := s.db.Begin(false)
	if err != nil {
		return store.User{}, err
	}
	defer func() { _ = tx.Rollback() }() // read only: nothing to undo
	userID, _, expiry, ok := decodeToken(tx.Bucket(bucketTokens).Get(digest[:]))
	if !ok || !s.now().Before(expiry) {
		return store.User{}, store.ErrUnauthenticated
	}
	if u, ok := s.users.get(userID); ok {
		return u, nil
	}
	u, err := getUser(tx, userID)
	if err != nil {
		return store.User{}, fmt.Errorf("token of missing user: %w", store.ErrUnauthenticated)
	}
	s.users.put(u, gen)
	return u, nil
}

// RevokeToken deletes one token; an unknown one is not an error.
func (s *Store) RevokeToken(digest [store.DigestSize]byte) error {
	return s.db.Update(func(tx *bbolt.Tx) error {
		return deleteToken(tx, digest[:])
	})
}

func deleteToken(tx *bbolt.Tx, digest []byte) error {
	toks := tx.Bucket(bucketTokens)
	userID, _, _, ok := decodeToken(toks.Get(digest))
	if !ok {
		return nil
	}
	if err := toks.Delete(digest); err != nil {
		return err
	}
	return tx.Bucket(bucketUserToks).Delete(userTokenKey(userID, digest))
}

// RevokeUserTokens deletes every token of the user except keep (nil keeps none) and
// returns how many were deleted. It starts a new credentials generation, so a login
// that checked the password before gets no token after.
func (s *Store) RevokeUserTokens(userID uint64, keep []byte) (int, error) {
	var n int
	err := s.updateUser(userID, func(tx *bbolt.Tx, r *userRecord) (err error) {
		r.CredentialsGen++
		n, err = revokeUserTokens(tx, userID, keep)
		return err
	})
	return n, err
}

func revokeUserTokens(tx *bbolt.Tx, userID uint64, keep []byte) (int, error) {
	prefix := itob(userID)
	var digests [][]byte
	c := tx.Bucket(bucketUserToks).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if d := k[8:]; !bytes.Equal(d, keep) {
			digests = append(digests, bytes.Clone(d))
		}
	}
	for _, d := range digests {
		if err := deleteToken(tx, d); err != nil {
			return 0, err
		}
	}
	return len(digests), nil
}

// SweepExpiredTokens deletes tokens whose expiry has passed and returns how many.
func (s *Store) SweepExpiredTokens() (int, error) {
	now := s.now()
	var n int
	err := s.db.Update(func(tx *bbolt.Tx) error {
		// Collect first: a bucket must not change under its own cursor.
		var expired [][]byte
		c := tx.Bucket(bucketTokens).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if _, _, expiry, ok := decodeToken(v); !ok || !now.Before(expiry) {
				expired = append(expired, bytes.Clone(k))
			}
		}
		for _, d := range expired {
			if err := deleteToken(tx, d); err != nil {
				return err
			}
		}
		n = len(expired)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// ListTokens describes every stored token (digest prefixes only).
func (s *Store) ListTokens() ([]store.Token, error) {
	var out []store.Token
	err := s.db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketTokens).ForEach(func(k, v []byte) error {
			userID, created, expiry, ok := decodeToken(v)
			if !ok {
				return fmt.Errorf("token record of %d bytes: corrupt", len(v))
			}
			out = append(out, store.Token{Prefix: fmt.Sprintf("%x", k[:6]), UserID: userID, Created: created, Expiry: expiry})
			return nil
		})
	})
	return out, err
}

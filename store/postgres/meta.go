package postgres

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/gardend/gardend/store"
)

// Ping checks that the database answers with the schema this build knows.
func (s *Store) Ping() error {
	return s.do(func(ctx context.Context) error {
		v, err := s.schemaVersion(ctx, s.pool)
		if err == nil && v == 0 {
			return fmt.Errorf("the database has no schema")
		}
		return err
	})
}

// DataID returns the database's identity, made by the first node that asks (one
// INSERT … ON CONFLICT DO NOTHING: nodes asking at once all read the same id).
func (s *Store) DataID() (id string, created bool, err error) {
	var b [16]byte
	rand.Read(b[:]) // never fails: crypto/rand crashes the program instead
	mine := hex.EncodeToString(b[:])
	value, created, err := s.getOrPut("data_id", []byte(mine))
	return string(value), created, err
}

// Secret returns the install's secret of that name, size random bytes made by the
// first node that asks and the same for every node after. Secrets are not part of
// archives: a restored install makes new ones.
func (s *Store) Secret(name string, size int) ([]byte, error) {
	if name == "" || size <= 0 {
		return nil, store.Invalid("secret", "a secret needs a name and a size")
	}
	fresh := make([]byte, size)
	rand.Read(fresh)
	value, _, err := s.getOrPut("secret:"+name, fresh)
	if err == nil && len(value) != size {
		return nil, fmt.Errorf("secret %s: stored with %d bytes, want %d", name, len(value), size)
	}
	return value, err
}

// getOrPut returns the value of name in meta, storing value first if there is none;
// created reports that this call stored it. value is fresh random bytes, so the value
// stored is this call's exactly when it equals value: that stays true when a retry
// finds what a first try whose answer was lost inserted.
func (s *Store) getOrPut(name string, value []byte) (stored []byte, created bool, err error) {
	err = s.do(func(ctx context.Context) error {
		if _, err := s.pool.Exec(ctx, `INSERT INTO meta (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`, name, value); err != nil {
			return err
		}
		return s.pool.QueryRow(ctx, `SELECT value FROM meta WHERE name = $1`, name).Scan(&stored)
	})
	return stored, err == nil && bytes.Equal(stored, value), err
}

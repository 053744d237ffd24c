package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gardend/gardend/store"
)

// CreateToken stores the digest of a new token for user id, valid until expiry. The
// foreign key refuses a user that does not exist (or is removed meanwhile).
func (s *Store) CreateToken(userID uint64, digest [store.DigestSize]byte, expiry time.Time) error {
	if err := store.ValidateTokenDigest(digest); err != nil {
		return err
	}
	err := s.do(func(ctx context.Context) error {
		_, err := s.pool.Exec(ctx, `INSERT INTO tokens (digest, user_id, created, expiry) VALUES ($1, $2, $3, $4)
			ON CONFLICT (digest) DO UPDATE SET user_id = excluded.user_id, created = excluded.created, expiry = excluded.expiry`,
			digest[:], userID, ts(s.now()), ts(expiry))
		return err
	})
	if isForeignKey(err) {
		return fmt.Errorf("user %d: %w", userID, store.ErrNotFound)
	}
	return err
}

// Authenticate resolves a token digest to its user in one query. Unknown and expired
// tokens are ErrUnauthenticated; a database that cannot answer is ErrUnavailable,
// never ErrUnauthenticated, so an outage does not log anybody out.
func (s *Store) Authenticate(digest [store.DigestSize]byte) (store.User, error) {
	var (
		u      store.User
		expiry time.Time
	)
	err := s.do(func(ctx context.Context) error {
		row := s.pool.QueryRow(ctx, `SELECT u.id, u.username, u.first_name, u.last_name, u.email, u.date_joined,
				u.last_login, u.site_admin, u.password_hash, u.credentials_gen, t.expiry
			FROM tokens t JOIN users u ON u.id = t.user_id WHERE t.digest = $1`, digest[:])
		err := row.Scan(&u.ID, &u.Username, &u.FirstName, &u.LastName, &u.Email, &u.DateJoined,
			&u.LastLogin, &u.SiteAdmin, &u.PasswordHash, &u.CredentialsGen, &expiry)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrUnauthenticated
		}
		return err
	})
	if err != nil {
		return store.User{}, err
	}
	if !s.now().Before(expiry) {
		return store.User{}, store.ErrUnauthenticated
	}
	u.DateJoined = u.DateJoined.UTC()
	if u.LastLogin != nil {
		t := u.LastLogin.UTC()
		u.LastLogin = &t
	}
	return u, nil
}

// RevokeToken deletes one token; an unknown one is not an error.
func (s *Store) RevokeToken(digest [store.DigestSize]byte) error {
	return s.do(func(ctx context.Context) error {
		_, err := s.pool.Exec(ctx, `DELETE FROM tokens WHERE digest = $1`, digest[:])
		return err
	})
}

// CreateLoginToken stores the token of a login that checked verified's password, and
// sets last_login, only while the account's password hash and credentials generation
// are still those verified holds: the UPDATE's condition and its row lock make the
// check and the write one step, so a password change or a logout everywhere that
// commits first leaves the login without a token (ErrCredentialsChanged).
func (s *Store) CreateLoginToken(verified store.User, digest [store.DigestSize]byte, expiry time.Time) error {
	if err := store.ValidateTokenDigest(digest); err != nil {
		return err
	}
	return s.write(func(ctx context.Context, tx pgx.Tx) error {
		now := s.now()
		tag, err := tx.Exec(ctx, `UPDATE users SET last_login = $4
			WHERE id = $1 AND password_hash = $2 AND credentials_gen = $3`,
			verified.ID, verified.PasswordHash, verified.CredentialsGen, ts(now))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 { // changed, or deleted with its credentials
			return fmt.Errorf("user %d: %w", verified.ID, store.ErrCredentialsChanged)
		}
		_, err = tx.Exec(ctx, `INSERT INTO tokens (digest, user_id, created, expiry) VALUES ($1, $2, $3, $4)
			ON CONFLICT (digest) DO UPDATE SET user_id = excluded.user_id, created = excluded.created, expiry = excluded.expiry`,
			digest[:], verified.ID, ts(now), ts(expiry))
		return err
	})
}

// RevokeUserTokens deletes every token of the user except keep (nil keeps none) and
// returns how many were deleted. It starts a new credentials generation, so a login
// that checked the password before gets no token after.
func (s *Store) RevokeUserTokens(userID uint64, keep []byte) (int, error) {
	var n int
	err := s.write(func(ctx context.Context, tx pgx.Tx) (err error) {
		tag, err := tx.Exec(ctx, `UPDATE users SET credentials_gen = credentials_gen + 1 WHERE id = $1`, userID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("user %d: %w", userID, store.ErrNotFound)
		}
		n, err = revokeUserTokens(ctx, tx, userID, keep)
		return err
	})
	return n, err
}

func revokeUserTokens(ctx context.Context, q querier, userID uint64, keep []byte) (int, error) {
	// A nil keep must not match: bytes.Clone keeps nil as nil, which is SQL NULL, and
	// "digest <> NULL" is never true, hence the IS DISTINCT FROM.
	tag, err := q.Exec(ctx, `DELETE FROM tokens WHERE user_id = $1 AND digest IS DISTINCT FROM $2`, userID, bytes.Clone(keep))
	return int(tag.RowsAffected()), err
}

// SweepExpiredTokens deletes tokens whose expiry has passed and returns how many.
func (s *Store) SweepExpiredTokens() (int, error) {
	var n int
	err := s.write(func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM tokens WHERE expiry <= $1`, ts(s.now()))
		n = int(tag.RowsAffected())
		return err
	})
	return n, err
}

// ListTokens describes every stored token (digest prefixes only), by digest.
func (s *Store) ListTokens() ([]store.Token, error) {
	var out []store.Token
	err := s.do(func(ctx context.Context) error {
		rows, err := s.pool.Query(ctx, `SELECT digest, user_id, created, expiry FROM tokens ORDER BY digest`)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Token, error) {
			var (
				t      store.Token
				digest []byte
			)
			err := r.Scan(&digest, &t.UserID, &t.Created, &t.Expiry)
			t.Prefix = fmt.Sprintf("%x", digest[:min(6, len(digest))])
			t.Created, t.Expiry = t.Created.UTC(), t.Expiry.UTC()
			return t, err
		})
		return err
	})
	return out, err
}

package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/gardend/gardend/store"
)

const userColumns = `id, username, first_name, last_name, email, date_joined, last_login, site_admin, password_hash`

func scanUser(row pgx.Row) (store.User, error) {
	var u store.User
	err := row.Scan(&u.ID, &u.Username, &u.FirstName, &u.LastName, &u.Email, &u.DateJoined, &u.LastLogin, &u.SiteAdmin, &u.PasswordHash)
	u.DateJoined = u.DateJoined.UTC()
	if u.LastLogin != nil {
		t := u.LastLogin.UTC()
		u.LastLogin = &t
	}
	return u, err
}

// CreateUser stores a new user; a taken username is ErrConflict (the unique
// constraint decides, so two nodes cannot both take a name).
func (s *Store) CreateUser(in store.NewUser) (store.User, error) {
	if err := store.ValidateNewUser(in); err != nil {
		return store.User{}, err
	}
	var u store.User
	err := s.do(func(ctx context.Context) (err error) {
		u, err = scanUser(s.pool.QueryRow(ctx, `INSERT INTO users
			(username, first_name, last_name, email, password_hash, date_joined, site_admin)
			VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING `+userColumns,
			in.Username, in.FirstName, in.LastName, in.Email, in.PasswordHash, ts(s.now()), in.SiteAdmin))
		return err
	})
	if isUnique(err) {
		return store.User{}, store.UsernameTaken(in.Username)
	}
	return u, err
}

func userByID(ctx context.Context, q querier, id uint64) (store.User, error) {
	u, err := scanUser(q.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.User{}, fmt.Errorf("user %d: %w", id, store.ErrNotFound)
	}
	return u, err
}

// UserByID returns the user with id.
func (s *Store) UserByID(id uint64) (store.User, error) {
	var u store.User
	err := s.do(func(ctx context.Context) (err error) {
		u, err = userByID(ctx, s.pool, id)
		return err
	})
	return u, err
}

// UserByUsername returns the user named username (case-sensitive).
func (s *Store) UserByUsername(username string) (store.User, error) {
	var u store.User
	err := s.do(func(ctx context.Context) (err error) {
		u, err = scanUser(s.pool.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE username = $1`, username))
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("user %q: %w", username, store.ErrNotFound)
		}
		return err
	})
	return u, err
}

// RecordLogin sets the user's last_login to now.
func (s *Store) RecordLogin(id uint64) error {
	return s.do(func(ctx context.Context) error {
		tag, err := s.pool.Exec(ctx, `UPDATE users SET last_login = $2 WHERE id = $1`, id, ts(s.now()))
		if err == nil && tag.RowsAffected() == 0 {
			return fmt.Errorf("user %d: %w", id, store.ErrNotFound)
		}
		return err
	})
}

// UpdateUser applies the non-nil fields of up. A new username must be free; a new
// password hash revokes every token of the user except up.KeepToken, in the same
// transaction.
func (s *Store) UpdateUser(id uint64, up store.UserUpdate) (store.User, error) {
	if err := store.ValidateUserUpdate(up); err != nil {
		return store.User{}, err
	}
	var out store.User
	err := s.write(func(ctx context.Context, tx pgx.Tx) error {
		// The UPDATE locks the row: two updates of one user apply one after the other,
		// and the unique constraint settles a name two users want.
		u, err := scanUser(tx.QueryRow(ctx, `UPDATE users SET
				username = coalesce($2, username),
				first_name = coalesce($3, first_name),
				last_name = coalesce($4, last_name),
				email = coalesce($5, email),
				password_hash = coalesce($6, password_hash)
			WHERE id = $1 RETURNING `+userColumns,
			id, up.Username, up.FirstName, up.LastName, up.Email, up.PasswordHash))
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("user %d: %w", id, store.ErrNotFound)
		case isUnique(err):
			return store.UsernameTaken(*up.Username)
		case err != nil:
			return err
		}
		if up.PasswordHash != nil {
			if _, err := revokeUserTokens(ctx, tx, id, up.KeepToken); err != nil {
				return err
			}
		}
		out = u
		return nil
	})
	return out, err
}

// ListUsers returns every user by id, without password hashes.
func (s *Store) ListUsers() ([]store.User, error) {
	var out []store.User
	err := s.do(func(ctx context.Context) error {
		rows, err := s.pool.Query(ctx, `SELECT `+userColumns+` FROM users ORDER BY id`)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.User, error) {
			u, err := scanUser(r)
			u.PasswordHash = ""
			return u, err
		})
		return err
	})
	return out, err
}

// userIDByName resolves a username inside a transaction.
func userIDByName(ctx context.Context, q querier, username string) (uint64, bool, error) {
	var id uint64
	err := q.QueryRow(ctx, `SELECT id FROM users WHERE username = $1`, username).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	return id, err == nil, err
}

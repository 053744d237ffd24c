package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/gardend/gardend/store"
)

const userColumns = `id, username, first_name, last_name, email, date_joined, last_login, site_admin, password_hash, credentials_gen`

func scanUser(row pgx.Row) (store.User, error) {
	var u store.User
	err := row.Scan(&u.ID, &u.Username, &u.FirstName, &u.LastName, &u.Email, &u.DateJoined, &u.LastLogin, &u.SiteAdmin, &u.PasswordHash, &u.CredentialsGen)
	u.DateJoined = u.DateJoined.UTC()
	if u.LastLogin != nil {
		t := u.LastLogin.UTC()
		u.LastLogin = &t
	}
	return u, err
}

// CreateUser stores a new user under the normalised form of its username; a name
// taken, or one that looks like a taken one, is ErrConflict. The unique constraint
// settles an exact name two nodes want; claimUsername's advisory lock on the name's
// skeleton serialises lookalikes.
func (s *Store) CreateUser(in store.NewUser) (store.User, error) {
	in, err := store.PrepareNewUser(in)
	if err != nil {
		return store.User{}, err
	}
	var u store.User
	err = s.write(func(ctx context.Context, tx pgx.Tx) (err error) {
		if err := claimUsername(ctx, tx, in.Username, 0); err != nil {
			return err
		}
		u, err = scanUser(tx.QueryRow(ctx, `INSERT INTO users
			(username, first_name, last_name, email, password_hash, date_joined, site_admin, username_look, username_look_lower)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING `+userColumns,
			append([]any{in.Username, in.FirstName, in.LastName, in.Email, in.PasswordHash, ts(s.now()), in.SiteAdmin},
				looksOf(in.Username)...)...))
		if err != nil {
			return err
		}
		return recordChange(ctx, tx, s.now(), store.KindUser, u.ID, 0, false)
	})
	if isUnique(err) {
		return store.User{}, store.UsernameTaken(in.Username)
	}
	return u, err
}

// looksOf is a username's two look columns (store.UsernameLooks): username_look and
// username_look_lower, equal when the name has one look.
func looksOf(name string) []any {
	looks := store.UsernameLooks(name)
	return []any{looks[0], looks[len(looks)-1]}
}

// claimUsername checks that name (normalised) is free for account id (0: a new one):
// no other account has it, nor a name that shares one of its looks. It first takes a
// transaction-level advisory lock on each look, in order: two transactions claiming
// lookalike names share a look, so they run one after the other and the second sees
// the first's row.
func claimUsername(ctx context.Context, tx pgx.Tx, name string, id uint64) error {
	if !store.CleanText(name) {
		return nil // no account has such a name (nor can PostgreSQL compare it): free, as on bbolt
	}
	looks := store.UsernameLooks(name)
	locks := slices.Sorted(slices.Values(looks))
	for _, look := range locks {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "gardend-username:"+look); err != nil {
			return err
		}
	}
	if other, ok, err := userIDByName(ctx, tx, name); err != nil {
		return err
	} else if ok && other != id {
		return store.UsernameTaken(name)
	}
	var taken bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM users
			WHERE (username_look = ANY($1) OR username_look_lower = ANY($1)) AND id <> $2)`, looks, id).Scan(&taken); err != nil {
		return err
	}
	if taken {
		return store.UsernameLooksTaken(name)
	}
	return nil
}

// reindexUsernameLooks computes both look columns of every account (schema 2 → 3:
// Unicode's confusables in place of the hand-written table, case-folded). Accounts
// that now look alike all stay: only new names are held to the rule.
func reindexUsernameLooks(ctx context.Context, tx pgx.Tx) error {
	rows, err := tx.Query(ctx, `SELECT id, username FROM users`)
	if err != nil {
		return err
	}
	type account struct {
		id   uint64
		name string
	}
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (a account, err error) {
		err = r.Scan(&a.id, &a.name)
		return a, err
	})
	if err != nil {
		return err
	}
	var batch pgx.Batch
	for _, a := range all {
		batch.Queue(`UPDATE users SET username_look = $2, username_look_lower = $3 WHERE id = $1`,
			append([]any{a.id}, looksOf(a.name)...)...)
	}
	if err := tx.SendBatch(ctx, &batch).Close(); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `ALTER TABLE users ALTER COLUMN username_look_lower SET NOT NULL`)
	return err
}

// CheckUsernameFree is claimUsername on its own, for a caller that wants to refuse a
// taken name before it spends a hash; the write that takes the name checks again.
func (s *Store) CheckUsernameFree(name string, id uint64) error {
	return s.write(func(ctx context.Context, tx pgx.Tx) error {
		return claimUsername(ctx, tx, store.NormalizeUsername(name), id)
	})
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

// UserByUsername returns the user a username means (see userIDByName).
func (s *Store) UserByUsername(username string) (store.User, error) {
	var u store.User
	err := s.do(func(ctx context.Context) error {
		id, ok, err := userIDByName(ctx, s.pool, username)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("user %q: %w", username, store.ErrNotFound)
		}
		u, err = userByID(ctx, s.pool, id)
		return err
	})
	return u, err
}

// UpdateUser applies the non-nil fields of up. A new username (stored normalised) must
// be free and not look like a taken one; a new password hash revokes every token of
// the user except up.KeepToken and starts a new credentials generation, in the same
// transaction, so logins that checked the old password get no token. With
// up.IfUnchanged the update applies only while the username and credentials
// generation are still those the caller read.
func (s *Store) UpdateUser(id uint64, up store.UserUpdate) (store.User, error) {
	up, err := store.PrepareUserUpdate(up)
	if err != nil {
		return store.User{}, err
	}
	var look, lookLower *string
	if up.Username != nil {
		looks := store.UsernameLooks(*up.Username)
		look, lookLower = &looks[0], &looks[len(looks)-1]
	}
	var out store.User
	err = s.write(func(ctx context.Context, tx pgx.Tx) error {
		// The row lock first: two updates of one user apply one after the other.
		cur, err := scanUser(tx.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE id = $1 FOR UPDATE`, id))
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("user %d: %w", id, store.ErrNotFound)
		} else if err != nil {
			return err
		}
		if was := up.IfUnchanged; was != nil && (cur.Username != was.Username || cur.CredentialsGen != was.CredentialsGen) {
			return store.AccountChanged()
		}
		if up.Username != nil && *up.Username != cur.Username {
			if err := claimUsername(ctx, tx, *up.Username, id); err != nil {
				return err
			}
		}
		u, err := scanUser(tx.QueryRow(ctx, `UPDATE users SET
				username = coalesce($2, username),
				username_look = coalesce($3, username_look),
				username_look_lower = coalesce($8, username_look_lower),
				first_name = coalesce($4, first_name),
				last_name = coalesce($5, last_name),
				email = coalesce($6, email),
				password_hash = coalesce($7, password_hash),
				credentials_gen = credentials_gen + CASE WHEN $7::text IS NULL THEN 0 ELSE 1 END
			WHERE id = $1 RETURNING `+userColumns,
			id, up.Username, look, up.FirstName, up.LastName, up.Email, up.PasswordHash, lookLower))
		switch {
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
		return recordChange(ctx, tx, s.now(), store.KindUser, id, 0, false)
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

// PasswordHashKinds lists the kinds of password hash the accounts hold, by kind. The
// hashes stream through once: the kind is gardend's reading of each (store.HashKind).
func (s *Store) PasswordHashKinds() ([]store.HashKindCount, error) {
	var out []store.HashKindCount
	err := s.do(func(ctx context.Context) error {
		kinds := map[string]*store.HashKindCount{}
		rows, err := s.pool.Query(ctx, `SELECT password_hash FROM users`)
		if err != nil {
			return err
		}
		var hash string
		if _, err := pgx.ForEachRow(rows, []any{&hash}, func() error {
			store.CountHashKinds(kinds, hash)
			return nil
		}); err != nil {
			return err
		}
		out = store.SortedHashKinds(kinds)
		return nil
	})
	return out, err
}

// userIDByName finds the account a username means: the one of that exact name; else
// the one of its normalised form; else the one account stored before names were
// normalised (an archive of an older bbolt install) whose name normalises the same.
// All three share the name's first look, so one indexed query finds the candidates.
func userIDByName(ctx context.Context, q querier, username string) (uint64, bool, error) {
	if !store.CleanText(username) {
		return 0, false, nil // no account has such a name (nor can PostgreSQL compare it), as on bbolt
	}
	normal := store.NormalizeUsername(username)
	rows, err := q.Query(ctx, `SELECT id, username FROM users WHERE username = $1 OR username_look = $2`,
		username, store.UsernameLooks(username)[0])
	if err != nil {
		return 0, false, err
	}
	type account struct {
		id   uint64
		name string
	}
	found, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (a account, err error) {
		err = r.Scan(&a.id, &a.name)
		return a, err
	})
	if err != nil {
		return 0, false, err
	}
	var normalForm, legacy []uint64
	for _, a := range found {
		switch {
		case a.name == username:
			return a.id, true, nil
		case a.name == normal:
			normalForm = append(normalForm, a.id)
		case store.NormalizeUsername(a.name) == normal:
			legacy = append(legacy, a.id)
		}
	}
	if len(normalForm) == 1 {
		return normalForm[0], true, nil
	}
	if len(legacy) == 1 {
		return legacy[0], true, nil
	}
	return 0, false, nil
}

// ReplacePasswordHash swaps the user's hash for a new hash of the same password, in
// one conditional UPDATE: only over the hash it expects, so a password change that
// committed first wins. Tokens and the credentials generation stay. A hash that is
// the replacement already counts as replaced: replacement is freshly salted, so only
// this call (a try whose answer was lost) can have stored it.
func (s *Store) ReplacePasswordHash(userID uint64, old, replacement string) (bool, error) {
	var replaced bool
	err := s.write(func(ctx context.Context, tx pgx.Tx) error {
		var exists bool
		err := tx.QueryRow(ctx, `WITH u AS (
				UPDATE users SET password_hash = $3 WHERE id = $1 AND password_hash IN ($2, $3) RETURNING id)
			SELECT EXISTS (SELECT 1 FROM u), EXISTS (SELECT 1 FROM users WHERE id = $1)`,
			userID, old, replacement).Scan(&replaced, &exists)
		switch {
		case err != nil:
			return err
		case !exists:
			return fmt.Errorf("user %d: %w", userID, store.ErrNotFound)
		case replaced:
			return recordChange(ctx, tx, s.now(), store.KindUser, userID, 0, false)
		}
		return nil
	})
	return replaced, err
}

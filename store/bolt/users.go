package bolt

import (
	"fmt"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/gardend/gardend/store"
)

// userRecord is the stored form: User plus what User hides from JSON.
type userRecord struct {
	store.User
	PasswordHash   string `json:"password_hash"`
	CredentialsGen uint64 `json:"credentials_gen,omitempty"`
}

// CreateUser stores a new user under the normalised form of its username; a name
// taken, or one that looks like a taken one, is ErrConflict.
func (s *Store) CreateUser(in store.NewUser) (store.User, error) {
	in, err := store.PrepareNewUser(in)
	if err != nil {
		return store.User{}, err
	}
	rec := userRecord{User: store.User{
		Username: in.Username, FirstName: in.FirstName, LastName: in.LastName, Email: in.Email,
		DateJoined: s.now().UTC().Truncate(time.Microsecond), SiteAdmin: in.SiteAdmin,
	}, PasswordHash: in.PasswordHash}
	err = s.db.Update(func(tx *bbolt.Tx) error {
		if err := claimUsername(tx, in.Username, 0); err != nil {
			return err
		}
		users := tx.Bucket(bucketUsers)
		id, err := users.NextSequence()
		if err != nil {
			return err
		}
		rec.ID = id
		if err := putUsername(tx, in.Username, id); err != nil {
			return err
		}
		if err := putJSON(users, itob(id), rec); err != nil {
			return err
		}
		return recordChange(tx, s.now(), store.KindUser, id, 0, false)
	})
	if err != nil {
		return store.User{}, err
	}
	return rec.withHash(), nil
}

func (r userRecord) withHash() store.User {
	u := r.User
	u.PasswordHash, u.CredentialsGen = r.PasswordHash, r.CredentialsGen
	return u
}

func getUser(tx *bbolt.Tx, id uint64) (store.User, error) {
	rec, err := getRecord[userRecord](tx, bucketUsers, "user", id)
	if err != nil {
		return store.User{}, err
	}
	return rec.withHash(), nil
}

// UserByID returns the user with id.
func (s *Store) UserByID(id uint64) (store.User, error) {
	var u store.User
	err := s.db.View(func(tx *bbolt.Tx) (err error) {
		u, err = getUser(tx, id)
		return err
	})
	return u, err
}

// UserByUsername returns the user named username (case-sensitive): the account of
// that exact name, else of its normalised form (see userIDByName).
func (s *Store) UserByUsername(username string) (store.User, error) {
	var u store.User
	err := s.db.View(func(tx *bbolt.Tx) error {
		id, ok := userIDByName(tx, username)
		if !ok {
			return fmt.Errorf("user %q: %w", username, store.ErrNotFound)
		}
		var err error
		u, err = getUser(tx, id)
		return err
	})
	return u, err
}

// UpdateUser applies the non-nil fields of up. A new username (stored normalised)
// must be free and not look like a taken one; a new
// password hash revokes every token of the user except up.KeepToken and starts a new
// credentials generation, so logins that checked the old password get no token.
func (s *Store) UpdateUser(id uint64, up store.UserUpdate) (store.User, error) {
	up, err := store.PrepareUserUpdate(up)
	if err != nil {
		return store.User{}, err
	}
	var out store.User
	err = s.updateUser(id, func(tx *bbolt.Tx, r *userRecord) error {
		if was := up.IfUnchanged; was != nil && (r.Username != was.Username || r.CredentialsGen != was.CredentialsGen) {
			return store.AccountChanged()
		}
		if up.Username != nil && *up.Username != r.Username {
			if err := claimUsername(tx, *up.Username, id); err != nil {
				return err
			}
			if err := deleteUsername(tx, r.Username, id); err != nil {
				return err
			}
			if err := putUsername(tx, *up.Username, id); err != nil {
				return err
			}
			r.Username = *up.Username
		}
		if up.FirstName != nil {
			r.FirstName = *up.FirstName
		}
		if up.LastName != nil {
			r.LastName = *up.LastName
		}
		if up.Email != nil {
			r.Email = *up.Email
		}
		if up.PasswordHash != nil {
			r.PasswordHash = *up.PasswordHash
			r.CredentialsGen++
			if _, err := revokeUserTokens(tx, id, up.KeepToken); err != nil {
				return err
			}
		}
		out = r.withHash()
		return recordChange(tx, s.now(), store.KindUser, id, 0, false)
	})
	return out, err
}

func (s *Store) updateUser(id uint64, fn func(tx *bbolt.Tx, r *userRecord) error) error {
	// Invalidate after the commit: a reader that started earlier then sees a new
	// generation and does not cache the old record.
	defer s.users.invalidate(id)
	return s.db.Update(func(tx *bbolt.Tx) error {
		rec, err := getRecord[userRecord](tx, bucketUsers, "user", id)
		if err != nil {
			return err
		}
		if err := fn(tx, &rec); err != nil {
			return err
		}
		return putJSON(tx.Bucket(bucketUsers), itob(id), rec)
	})
}

// ListUsers returns every user by id.
func (s *Store) ListUsers() ([]store.User, error) {
	var out []store.User
	err := s.db.View(func(tx *bbolt.Tx) error {
		return eachUnder(tx, bucketUsers, nil, func(rec userRecord) { out = append(out, rec.User) })
	})
	return out, err
}

// PasswordHashKinds lists the kinds of password hash the accounts hold, by kind.
func (s *Store) PasswordHashKinds() ([]store.HashKindCount, error) {
	kinds := map[string]*store.HashKindCount{}
	err := s.db.View(func(tx *bbolt.Tx) error {
		return eachUnder(tx, bucketUsers, nil, func(rec userRecord) { store.CountHashKinds(kinds, rec.PasswordHash) })
	})
	return store.SortedHashKinds(kinds), err
}

package store

import (
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"
)

// User is an account. PasswordHash never leaves the server.
type User struct {
	ID         uint64     `json:"id"`
	Username   string     `json:"username"`
	FirstName  string     `json:"first_name"`
	LastName   string     `json:"last_name"`
	Email      string     `json:"email"`
	DateJoined time.Time  `json:"date_joined"`
	LastLogin  *time.Time `json:"last_login"`
	// SiteAdmin users are admin of every company and garden (created with the CLI).
	SiteAdmin    bool   `json:"site_admin,omitempty"`
	PasswordHash string `json:"-"`
	// CredentialsGen counts the changes that end the account's sessions (a new
	// password, logging out everywhere). A login creates its token only while the
	// generation it read before checking the password is still current.
	CredentialsGen uint64 `json:"-"`
}

// userRecord is the stored form: User plus what User hides from JSON.
type userRecord struct {
	User
	PasswordHash   string `json:"password_hash"`
	CredentialsGen uint64 `json:"credentials_gen,omitempty"`
}

// NewUser is the input of CreateUser; the password is hashed by the caller.
type NewUser struct {
	Username     string
	FirstName    string
	LastName     string
	Email        string
	PasswordHash string
	SiteAdmin    bool
}

// UserUpdate changes the non-nil fields of a user.
type UserUpdate struct {
	Username     *string
	FirstName    *string
	LastName     *string
	Email        *string
	PasswordHash *string
	// KeepToken, with a password change, is the digest of the only token that survives.
	KeepToken []byte
	// IfUnchanged, when set, is the user as the caller read it to check a rule between
	// its username and password: the update applies only while both are still those.
	IfUnchanged *User
}

// Validate checks the fields being changed (a new username in its stored form), so a
// caller can refuse a bad request before it spends a hash on a new password.
func (up UserUpdate) Validate() error {
	v := &ValidationError{}
	if up.Username != nil {
		if msg := ValidateNewUsername(*up.Username); msg != "" {
			v.Add("username", msg)
		}
	}
	if up.FirstName != nil {
		if msg := ValidateName(*up.FirstName); msg != "" {
			v.Add("first_name", "first_name "+msg)
		}
	}
	if up.LastName != nil {
		if msg := ValidateName(*up.LastName); msg != "" {
			v.Add("last_name", "last_name "+msg)
		}
	}
	if up.Email != nil {
		if msg := ValidateEmail(*up.Email); msg != "" {
			v.Add("email", msg)
		}
	}
	return v.OrNil()
}

var usernamePattern = regexp.MustCompile(`^[\p{L}\p{N}@.+\-_]+$`)

// ValidateUsername applies the account rules of decisions.md.
func ValidateUsername(v string) string {
	switch n := utf8.RuneCountInString(v); {
	case n == 0:
		return "username is required"
	case n > 150:
		return "username must be at most 150 characters"
	case !usernamePattern.MatchString(v):
		return "username may contain only letters, digits and @ . + - _"
	}
	return ""
}

// ValidatePassword checks a clear-text password before hashing.
func ValidatePassword(password, username string) string {
	n := utf8.RuneCountInString(password)
	switch {
	case n < 8:
		return "password must be at least 8 characters"
	case n > 256:
		return "password must be at most 256 characters"
	case strings.Trim(password, "0123456789") == "":
		return "password must not be entirely numeric"
	case NormalizeUsername(password) == NormalizeUsername(username):
		// Compared as the username is stored: "ｇａｒｄｅｎｅｒ" is the username
		// "gardener".
		return "password must not equal the username"
	}
	return ""
}

// ValidateName checks first_name and last_name.
func ValidateName(v string) string {
	switch {
	case strings.TrimSpace(v) == "":
		return "must not be empty"
	case utf8.RuneCountInString(v) > 150:
		return "must be at most 150 characters"
	}
	return ""
}

// ValidateEmail accepts "" (unset) or something shaped like an address.
func ValidateEmail(v string) string {
	if v == "" {
		return ""
	}
	at := strings.LastIndexByte(v, '@')
	switch {
	case len(v) > 254:
		return "email must be at most 254 characters"
	case at < 1 || at == len(v)-1 || strings.ContainsAny(v, " \t\r\n"):
		return "email must look like name@example.org"
	}
	return ""
}

// Validate checks every field of a new account but the password hash, so a caller
// can refuse a bad request before it spends a hash on it. The username is checked in
// the form it will be stored in (NormalizeUsername).
func (in NewUser) Validate() error {
	v := &ValidationError{}
	if msg := ValidateNewUsername(in.Username); msg != "" {
		v.Add("username", msg)
	}
	if msg := ValidateName(in.FirstName); msg != "" {
		v.Add("first_name", "first_name "+msg)
	}
	if msg := ValidateName(in.LastName); msg != "" {
		v.Add("last_name", "last_name "+msg)
	}
	if msg := ValidateEmail(in.Email); msg != "" {
		v.Add("email", msg)
	}
	return v.OrNil()
}

// CreateUser stores a new user under the normalised form of its username; a name
// taken, or one that looks like a taken one, is ErrConflict.
func (s *Store) CreateUser(in NewUser) (User, error) {
	in.Username = NormalizeUsername(in.Username)
	if err := in.Validate(); err != nil {
		return User{}, err
	}
	if in.PasswordHash == "" {
		return User{}, Invalid("password", "password is required")
	}
	rec := userRecord{User: User{
		Username: in.Username, FirstName: in.FirstName, LastName: in.LastName, Email: in.Email,
		DateJoined: s.now().UTC().Truncate(time.Microsecond), SiteAdmin: in.SiteAdmin,
	}, PasswordHash: in.PasswordHash}
	err := s.db.Update(func(tx *bolt.Tx) error {
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
		return putJSON(users, itob(id), rec)
	})
	if err != nil {
		return User{}, err
	}
	return rec.withHash(), nil
}

func (r userRecord) withHash() User {
	u := r.User
	u.PasswordHash, u.CredentialsGen = r.PasswordHash, r.CredentialsGen
	return u
}

func getUser(tx *bolt.Tx, id uint64) (User, error) {
	rec, err := getRecord[userRecord](tx, bucketUsers, "user", id)
	if err != nil {
		return User{}, err
	}
	return rec.withHash(), nil
}

// UserByID returns the user with id.
func (s *Store) UserByID(id uint64) (User, error) {
	var u User
	err := s.db.View(func(tx *bolt.Tx) (err error) {
		u, err = getUser(tx, id)
		return err
	})
	return u, err
}

// UserByUsername returns the user named username (case-sensitive): the account of
// that exact name, else of its normalised form (see userIDByName).
func (s *Store) UserByUsername(username string) (User, error) {
	var u User
	err := s.db.View(func(tx *bolt.Tx) error {
		id, ok := userIDByName(tx, username)
		if !ok {
			return fmt.Errorf("user %q: %w", username, ErrNotFound)
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
func (s *Store) UpdateUser(id uint64, up UserUpdate) (User, error) {
	if err := up.Validate(); err != nil {
		return User{}, err
	}
	if up.Username != nil {
		name := NormalizeUsername(*up.Username)
		up.Username = &name
	}
	var out User
	err := s.updateUser(id, func(tx *bolt.Tx, r *userRecord) error {
		if was := up.IfUnchanged; was != nil && (r.Username != was.Username || r.CredentialsGen != was.CredentialsGen) {
			return fmt.Errorf("%w: the account's username or password changed while this request was handled; send it again", ErrConflict)
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
		return nil
	})
	return out, err
}

func (s *Store) updateUser(id uint64, fn func(tx *bolt.Tx, r *userRecord) error) error {
	// Invalidate after the commit: a reader that started earlier then sees a new
	// generation and does not cache the old record.
	defer s.users.invalidate(id)
	return s.db.Update(func(tx *bolt.Tx) error {
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
func (s *Store) ListUsers() ([]User, error) {
	var out []User
	err := s.db.View(func(tx *bolt.Tx) error {
		return eachUnder(tx, bucketUsers, nil, func(rec userRecord) { out = append(out, rec.User) })
	})
	return out, err
}

package store

import (
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
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

// usernameChars reports whether v is made of letters and digits of any script and
// @ . + - _ only: what the regular expression ^[\p{L}\p{N}@.+\-_]+$ says, without
// compiling its Unicode classes at every start (FuzzUsernameChars compares them).
func usernameChars(v string) bool {
	for _, r := range v {
		if !unicode.IsLetter(r) && !unicode.IsNumber(r) && !strings.ContainsRune("@.+-_", r) {
			return false
		}
	}
	return v != ""
}

// ValidateUsername applies the account rules of decisions.md.
func ValidateUsername(v string) string {
	switch n := utf8.RuneCountInString(v); {
	case n == 0:
		return "username is required"
	case n > 150:
		return "username must be at most 150 characters"
	case !usernameChars(v):
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

// maxPersonName bounds first_name and last_name, in characters.
const maxPersonName = 150

// ValidateName checks first_name and last_name.
func ValidateName(v string) string {
	switch {
	case strings.TrimSpace(v) == "":
		return "must not be empty"
	case utf8.RuneCountInString(v) > maxPersonName:
		return "must be at most 150 characters"
	}
	return textProblem(v)
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
	case !CleanText(v):
		return "email " + textProblem(v)
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

package store

import (
	"errors"
	"sort"
	"strings"
)

// Sentinel errors. Callers test them with errors.Is; the HTTP layer maps them to status
// codes in one place.
var (
	// ErrNotFound: the addressed record does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the write collides with an existing record (a taken username, …).
	ErrConflict = errors.New("conflict")
	// ErrInvalid: the input breaks a validation rule; see ValidationError for fields.
	ErrInvalid = errors.New("invalid input")
	// ErrForbidden: a rule of the domain forbids the write (self-removal, last admin).
	ErrForbidden = errors.New("forbidden")
	// ErrUnauthenticated: a token is unknown, revoked or expired.
	ErrUnauthenticated = errors.New("invalid or expired token")
	// ErrCredentialsChanged: the password a login checked is no longer the account's,
	// or its sessions were ended meanwhile; the login gets no token.
	ErrCredentialsChanged = errors.New("the account's credentials changed during the login")
	// ErrLocked: another process holds the database.
	ErrLocked = errors.New("database is locked by another process")
)

// ValidationError names each offending field with a message saying what to fix.
// It matches ErrInvalid under errors.Is.
type ValidationError struct {
	Fields map[string]string
}

// Invalid builds a ValidationError for one field.
func Invalid(field, msg string) *ValidationError {
	return &ValidationError{Fields: map[string]string{field: msg}}
}

// Add records a problem with field; the first message for a field wins.
func (e *ValidationError) Add(field, msg string) {
	if e.Fields == nil {
		e.Fields = map[string]string{}
	}
	if _, ok := e.Fields[field]; !ok {
		e.Fields[field] = msg
	}
}

// OrNil returns nil when no field was recorded, so validators can end with `return v.OrNil()`.
func (e *ValidationError) OrNil() error {
	if e == nil || len(e.Fields) == 0 {
		return nil
	}
	return e
}

func (e *ValidationError) Error() string {
	names := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = k + ": " + e.Fields[k]
	}
	return strings.Join(parts, "; ")
}

func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

package server

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/gardend/gardend/store"
)

// Admin carries out the CLI's operations. The CLI runs it in-process when no server
// holds the database, and through the admin socket when one does, so both paths share
// one implementation.
type Admin struct {
	store *store.Store
	pw    *store.Passwords
	ops   map[string]adminOp

	// backups is shared by the admin socket and GET /admin/backup.
	backups *backupState
}

type adminOp func(ctx context.Context, args json.RawMessage) (any, error)

// NewAdmin binds the operations to a store.
func NewAdmin(st *store.Store, pw *store.Passwords) *Admin {
	a := &Admin{store: st, pw: pw}
	a.backups = newBackupState()
	a.ops = map[string]adminOp{
		"users.create":   a.createUser,
		"inspect.users":  func(context.Context, json.RawMessage) (any, error) { return st.ListUsers() },
		"inspect.tokens": func(context.Context, json.RawMessage) (any, error) { return st.ListTokens() },
		"inspect.stats":  func(context.Context, json.RawMessage) (any, error) { return st.Stats() },
		BackupOp:         a.backupOp,
	}
	return a
}

// Ops lists the operation names.
func (a *Admin) Ops() []string {
	out := make([]string, 0, len(a.ops))
	for k := range a.ops {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Do runs the named operation with JSON arguments.
func (a *Admin) Do(ctx context.Context, op string, args json.RawMessage) (any, error) {
	fn, ok := a.ops[op]
	if !ok {
		return nil, fmt.Errorf("%w: unknown admin operation %q", store.ErrNotFound, op)
	}
	return fn(ctx, args)
}

// CreateUserArgs are the arguments of "users.create".
type CreateUserArgs struct {
	Username  string `json:"username"`
	Password  string `json:"password"`
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name"`
	Email     string `json:"email"`
	SiteAdmin bool   `json:"site_admin"`
}

func (a *Admin) createUser(ctx context.Context, raw json.RawMessage) (any, error) {
	var args CreateUserArgs
	if err := json.Unmarshal(raw, &args); err != nil {
		return nil, fmt.Errorf("%w: arguments: %v", store.ErrInvalid, err)
	}
	if msg := store.ValidatePassword(args.Password, args.Username); msg != "" {
		return nil, store.Invalid("password", msg)
	}
	if msg := store.ValidateUsername(args.Username); msg != "" {
		return nil, store.Invalid("username", msg)
	}
	hash, err := a.pw.Hash(ctx, args.Password)
	if err != nil {
		return nil, err
	}
	u, err := a.store.CreateUser(store.NewUser{
		Username: args.Username, FirstName: args.FirstName, LastName: args.LastName,
		Email: args.Email, PasswordHash: hash, SiteAdmin: args.SiteAdmin,
	})
	if err != nil {
		return nil, err
	}
	u.PasswordHash = ""
	return u, nil
}

package server

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/gardend/gardend/server/pointcloud"
	"github.com/gardend/gardend/store"
)

// Admin carries out the CLI's operations. The CLI runs it in-process when no server
// holds the database, and through the admin socket when one does, so both paths share
// one implementation.
type Admin struct {
	store *store.Store
	pw    *store.Passwords
	ops   map[string]adminOp
	// afterRemove is the server's clean-up after a deletion; nil when the CLI runs
	// without a server, whose start-up sweep then deletes unreferenced files.
	afterRemove func(ctx context.Context, removed store.Removed)
	// clouds downloads point clouds: the server's pool, or one of UseSpatial's that
	// runs only while an operation needs it (runClouds). nil without a spatial server.
	clouds    *pointcloud.Pool
	runClouds bool

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

		"inspect.companies":   func(context.Context, json.RawMessage) (any, error) { return st.Companies() },
		"inspect.gardens":     func(context.Context, json.RawMessage) (any, error) { return st.Gardens() },
		"inspect.permissions": func(context.Context, json.RawMessage) (any, error) { return st.ListPermissions() },
		"beds.add":            a.addBed,
		"beds.remove":         a.removeBed,

		"inspect.beds":     func(context.Context, json.RawMessage) (any, error) { return st.BedStatuses() },
		"inspect.queue":    func(context.Context, json.RawMessage) (any, error) { return st.CloudJobs() },
		"pointclouds.sync": a.syncClouds,
		BackupOp:           a.backupOp,
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

// decodeArgs reads an operation's JSON arguments; malformed ones are invalid input.
func decodeArgs(raw json.RawMessage, dst any) error {
	if err := json.Unmarshal(raw, dst); err != nil {
		return fmt.Errorf("%w: arguments: %v", store.ErrInvalid, err)
	}
	return nil
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
	if err := decodeArgs(raw, &args); err != nil {
		return nil, err
	}
	if msg := store.ValidatePassword(args.Password, args.Username); msg != "" {
		return nil, store.Invalid("password", msg)
	}
	if msg := store.ValidateNewUsername(args.Username); msg != "" {
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

// BedAddArgs are the arguments of "beds.add".
type BedAddArgs struct {
	Garden uint64 `json:"garden"`
	UUID   string `json:"uuid"`
	Name   string `json:"name"`
}

func (a *Admin) addBed(_ context.Context, raw json.RawMessage) (any, error) {
	var args BedAddArgs
	if err := decodeArgs(raw, &args); err != nil {
		return nil, err
	}
	return a.store.CreateBed(args.Garden, args.UUID, args.Name)
}

// BedRemoveArgs are the arguments of "beds.remove".
type BedRemoveArgs struct {
	Garden uint64 `json:"garden"`
	Bed    uint64 `json:"bed"`
}

func (a *Admin) removeBed(ctx context.Context, raw json.RawMessage) (any, error) {
	var args BedRemoveArgs
	if err := decodeArgs(raw, &args); err != nil {
		return nil, err
	}
	removed, err := a.store.DeleteBed(args.Garden, args.Bed)
	if err != nil {
		return nil, err
	}
	if a.afterRemove != nil {
		a.afterRemove(ctx, removed)
	}
	return struct{}{}, nil
}

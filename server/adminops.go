package server

import (
	"context"

	"github.com/gardend/gardend/store"
)

// The admin operations of users, beds and inspection, one request type each; the
// point-cloud sync is in pcsync.go, the backup in backup.go. The socket serves exactly
// the operations adminSocketOps lists.

// once turns answer into the end of an operation that answers once: the value, or
// the error that stopped it.
func once[T any](answer func(T) error) func(T, error) error {
	return func(v T, err error) error {
		if err != nil {
			return err
		}
		return answer(v)
	}
}

// UsersCreate creates a user ("users.create"); it answers the user, without the
// password hash.
type UsersCreate struct {
	Username  string `json:"username"`
	Password  string `json:"password"`
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name"`
	Email     string `json:"email"`
	SiteAdmin bool   `json:"site_admin"`
}

func (UsersCreate) OpName() string { return "users.create" }

func (op UsersCreate) run(ctx context.Context, a *Admin, answer func(store.User) error) error {
	if msg := store.ValidatePassword(op.Password, op.Username); msg != "" {
		return store.Invalid("password", msg)
	}
	if msg := store.ValidateNewUsername(op.Username); msg != "" {
		return store.Invalid("username", msg)
	}
	hash, err := a.pw.Hash(ctx, op.Password)
	if err != nil {
		return err
	}
	u, err := a.store.CreateUser(store.NewUser{
		Username: op.Username, FirstName: op.FirstName, LastName: op.LastName,
		Email: op.Email, PasswordHash: hash, SiteAdmin: op.SiteAdmin,
	})
	u.PasswordHash = ""
	return once(answer)(u, err)
}

// UsersResetPassword gives the account a username names (found as login finds it:
// any spelling that normalises to it) a new password, and revokes every login token
// of the account ("users.reset-password"): for an account imported without a usable
// password (a hash Django marked unusable, one gardend does not verify, or one too
// costly to check), or one whose owner forgot it. It answers the user.
type UsersResetPassword struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

func (UsersResetPassword) OpName() string { return "users.reset-password" }

func (op UsersResetPassword) run(ctx context.Context, a *Admin, answer func(store.User) error) error {
	u, err := a.store.UserByUsername(op.Username)
	if err != nil {
		return err
	}
	if err := store.CheckHome("user", u.ID); err != nil {
		return err
	}
	if msg := store.ValidatePassword(op.Password, u.Username); msg != "" {
		return store.Invalid("password", msg)
	}
	hash, err := a.pw.Hash(ctx, op.Password)
	if err != nil {
		return err
	}
	// No token is kept: whoever held the account's sessions loses them.
	u, err = a.store.UpdateUser(u.ID, store.UserUpdate{PasswordHash: &hash})
	u.PasswordHash = ""
	return once(answer)(u, err)
}

// BedsAdd registers a spatial-server project as a bed of a garden ("beds.add"); it
// answers the bed.
type BedsAdd struct {
	Garden uint64 `json:"garden"`
	UUID   string `json:"uuid"`
	Name   string `json:"name"`
}

func (BedsAdd) OpName() string { return "beds.add" }

func (op BedsAdd) run(_ context.Context, a *Admin, answer func(store.Bed) error) error {
	if err := store.CheckHome("garden", op.Garden); err != nil {
		return err
	}
	return once(answer)(a.store.CreateBed(op.Garden, op.UUID, op.Name))
}

// BedsRemove removes a bed of a garden ("beds.remove").
type BedsRemove struct {
	Garden uint64 `json:"garden"`
	Bed    uint64 `json:"bed"`
}

// BedsRemoved is the answer of BedsRemove: the bed is gone.
type BedsRemoved struct{}

func (BedsRemove) OpName() string { return "beds.remove" }

func (op BedsRemove) run(ctx context.Context, a *Admin, answer func(BedsRemoved) error) error {
	if err := store.CheckHome("bed", op.Bed); err != nil {
		return err
	}
	removed, err := a.store.DeleteBed(op.Garden, op.Bed)
	if err != nil {
		return err
	}
	if a.afterRemove != nil {
		a.afterRemove(ctx, removed)
	}
	return answer(BedsRemoved{})
}

// The inspections take no arguments and answer what the store lists.
type (
	InspectUsers       struct{}
	InspectTokens      struct{}
	InspectStats       struct{}
	InspectCompanies   struct{}
	InspectGardens     struct{}
	InspectPermissions struct{}
	InspectBeds        struct{}
	InspectQueue       struct{}
)

func (InspectUsers) OpName() string       { return "inspect.users" }
func (InspectTokens) OpName() string      { return "inspect.tokens" }
func (InspectStats) OpName() string       { return "inspect.stats" }
func (InspectCompanies) OpName() string   { return "inspect.companies" }
func (InspectGardens) OpName() string     { return "inspect.gardens" }
func (InspectPermissions) OpName() string { return "inspect.permissions" }
func (InspectBeds) OpName() string        { return "inspect.beds" }
func (InspectQueue) OpName() string       { return "inspect.queue" }

func (InspectUsers) run(_ context.Context, a *Admin, answer func([]store.User) error) error {
	return once(answer)(a.store.ListUsers())
}

func (InspectTokens) run(_ context.Context, a *Admin, answer func([]store.Token) error) error {
	return once(answer)(a.store.ListTokens())
}

func (InspectStats) run(_ context.Context, a *Admin, answer func(store.Stats) error) error {
	return once(answer)(a.store.Stats())
}

func (InspectCompanies) run(_ context.Context, a *Admin, answer func([]store.Company) error) error {
	return once(answer)(a.store.Companies())
}

func (InspectGardens) run(_ context.Context, a *Admin, answer func([]store.Garden) error) error {
	return once(answer)(a.store.Gardens())
}

func (InspectPermissions) run(_ context.Context, a *Admin, answer func(store.PermissionList) error) error {
	return once(answer)(a.store.ListPermissions())
}

func (InspectBeds) run(_ context.Context, a *Admin, answer func([]store.BedStatus) error) error {
	return once(answer)(a.store.BedStatuses())
}

func (InspectQueue) run(_ context.Context, a *Admin, answer func([]store.CloudJob) error) error {
	return once(answer)(a.store.CloudJobs())
}

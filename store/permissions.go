package store

// Level is a permission letter (seed: Permission): "u" may read, "a" administers.
type Level string

// The two permission letters.
const (
	LevelUser  Level = "u"
	LevelAdmin Level = "a"
)

// Validate accepts exactly "u" and "a".
func (l Level) Validate() error {
	if msg := l.problem(); msg != "" {
		return Invalid("permission", msg)
	}
	return nil
}

func (l Level) problem() string {
	switch l {
	case LevelUser, LevelAdmin:
		return ""
	case "":
		return "permission is required: 'u' or 'a'"
	}
	return "permission must be 'u' or 'a'"
}

// Permission is one user's permission on a company or a garden. The username is
// looked up when read, so a renamed user shows the new name.
type Permission struct {
	ID       uint64 `json:"id"`
	UserID   uint64 `json:"-"`
	Username string `json:"username"`
	Level    Level  `json:"permission"`
}

// CompanyPermission is a permission on a company.
type CompanyPermission struct {
	Permission
	Company uint64 `json:"company"`
}

// GardenPermission is a permission on a garden.
type GardenPermission struct {
	Permission
	Garden uint64 `json:"garden"`
}

// PermissionList is every stored permission, for inspection.
type PermissionList struct {
	Company []CompanyPermission `json:"company"`
	Garden  []GardenPermission  `json:"garden"`
}

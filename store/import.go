package store

import (
	"slices"
	"time"
)

// ImportKind names a kind of imported record.
type ImportKind string

// The kinds, in the order they are planned and written (references point backwards).
const (
	ImportUsers        ImportKind = "users"
	ImportCompanies    ImportKind = "companies"
	ImportGardens      ImportKind = "gardens"
	ImportBeds         ImportKind = "beds"
	ImportCompanyPerms ImportKind = "company permissions"
	ImportGardenPerms  ImportKind = "garden permissions"
	ImportWidgets      ImportKind = "widgets"
)

// ImportKinds lists the kinds in planning order.
var ImportKinds = []ImportKind{ImportUsers, ImportCompanies, ImportGardens, ImportBeds, ImportCompanyPerms, ImportGardenPerms, ImportWidgets}

// Import is every record of one dump. Key fields are ids in the source; references
// (Company, Garden, User, On) are source keys of records in the same Import.
type Import struct {
	// Source names the system ("plantmap"); imports of one source recognise each
	// other's records.
	Source       string
	Users        []ImportUser
	Companies    []ImportCompany
	Gardens      []ImportGarden
	Beds         []ImportBed
	CompanyPerms []ImportPermission // On: a company key
	GardenPerms  []ImportPermission // On: a garden key
	Widgets      []ImportWidget
}

// ImportUser is an account with its hash as the source stored it (verified by
// Passwords.Verify, replaced on the first login). Names may be empty: the source
// allowed that, and nothing is invented for them.
type ImportUser struct {
	Key                                           uint64
	Username, FirstName, LastName, Email, PwdHash string
	DateJoined                                    time.Time
	LastLogin                                     *time.Time
	SiteAdmin                                     bool
}

// ImportCompany is a company.
type ImportCompany struct {
	Key  uint64
	Name string
}

// ImportGarden is a garden; with HasImage, ApplyImport needs the path of its image
// file (written before) and Coordinates are its set.
type ImportGarden struct {
	Key, Company uint64
	Name         string
	HasImage     bool
	Coordinates  Coordinates
}

// ImportBed is a bed.
type ImportBed struct {
	Key, Garden uint64
	UUID, Name  string
}

// ImportPermission is a company or garden permission.
type ImportPermission struct {
	Key, On, User uint64
	Level         Level
}

// ImportWidget is a user's widgets document (one valid JSON value).
type ImportWidget struct {
	Key, User uint64
	Doc       []byte
}

// ImportProblem is something about one record: an error blocks the whole import, a
// warning is reported and the record imported.
type ImportProblem struct {
	Kind    ImportKind
	Key     uint64
	Message string
	Warning bool
}

// KindPlan is what happens to the records of one kind.
type KindPlan struct {
	// KeepIDs: new records keep their source ids.
	KeepIDs bool
	// IDs maps the source key of every new or earlier imported record to its id
	// (for widgets: the user's id).
	IDs map[uint64]uint64
	// New are the keys to write; Already the keys an earlier import brought over,
	// left as they are; Skipped the keys left out, with the reason.
	New, Already []uint64
	Skipped      map[uint64]string
}

// ImportPlan is the outcome of planning an Import against the database.
type ImportPlan struct {
	Kinds    map[ImportKind]*KindPlan
	Problems []ImportProblem
}

// Errors reports whether a problem blocks the import.
func (p ImportPlan) Errors() bool {
	return slices.ContainsFunc(p.Problems, func(x ImportProblem) bool { return !x.Warning })
}

// NewGardensWithImage lists the keys of the gardens ApplyImport writes that need an
// image path, in key order.
func (p ImportPlan) NewGardensWithImage(in Import) []uint64 {
	var out []uint64
	plan := p.Kinds[ImportGardens]
	for _, g := range in.Gardens {
		if g.HasImage && slices.Contains(plan.New, g.Key) {
			out = append(out, g.Key)
		}
	}
	return out
}

// HasNew reports whether ApplyImport would write anything.
func (p ImportPlan) HasNew() bool {
	for _, k := range p.Kinds {
		if len(k.New) > 0 {
			return true
		}
	}
	return false
}

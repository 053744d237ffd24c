package store

import (
	"fmt"
	"time"
)

// Replicas are the records of other sites kept here, read-only, under their global ids
// (docs/sync.md). server/sitesync applies what their homes send through a
// ReplicaWriter, in one transaction per batch with the site's cursor, so that a
// change is applied exactly once whatever fails when.

// ReplicaUser is a user homed at another site, as its home sends it. Its password
// hash lets it log in here; its widgets document travels with it (nil: none). It is
// never a site admin here.
type ReplicaUser struct {
	ID           uint64
	Username     string
	FirstName    string
	LastName     string
	Email        string
	DateJoined   time.Time
	PasswordHash string
	Widgets      []byte
}

// ReplicaWriter writes replicas inside ApplyReplica's transaction. Records carry
// their ids here (global ones). Deleting what is not there is no error; a record
// whose parent is missing is ErrNotFound.
type ReplicaWriter interface {
	// PutUser creates or updates the user. Its username is the home's when no account
	// here has it or one like it, else name@SITE (the ApplyReplica site name), else
	// name@SITE.ID. A new password hash ends the user's sessions here.
	PutUser(u ReplicaUser) error
	PutCompany(c Company) error
	DeleteCompany(id uint64) error
	// PutGarden creates or renames the garden; its picture is SetGardenImage's.
	PutGarden(g Garden) error
	DeleteGarden(id uint64) error
	// SetGardenImage points the garden at content stored here (ImageContent.PutImage)
	// with its coordinates; the content it showed before is removed after the commit.
	SetGardenImage(gardenID uint64, path string, cs Coordinates) error
	PutBed(b Bed) error
	DeleteBed(id uint64) error
	PutCompanyPermission(p CompanyPermission) error
	DeleteCompanyPermission(companyID, userID uint64) error
	PutGardenPermission(p GardenPermission) error
	DeleteGardenPermission(gardenID, userID uint64) error
	PutBedValues(v BedValues) error
	// PutLog creates or replaces the log as its home keeps it; its garden and users
	// must be here (a bed it names need not be: a log keeps a deleted bed's id).
	PutLog(l ArchivedLog) error
	// DeleteLog deletes the log with its photos; one gone already is no error.
	DeleteLog(id uint64) error
	// PutPhoto creates or replaces the photo as its home keeps it, pointing at
	// content stored here (PhotoContent.PutPhoto); its log (in p.Garden) and its
	// uploader must be here. The content it showed before and no longer does is
	// listed in Removed.PhotoPaths, to remove after the commit.
	PutPhoto(p Photo) error
	// DeletePhoto deletes the photo; one gone already is no error.
	DeletePhoto(id uint64) error
	// PutHistorySpan replaces the bed's points in the span with the span's; the bed
	// must be here, in the span's garden.
	PutHistorySpan(s HistorySpan) error
	// PutAlert creates or replaces the alert as its home keeps it (a task it names
	// that is not here reads as none); its bed must be here, in its garden.
	PutAlert(a Alert) error
	// PutGuidance replaces the garden's guidance; nothing is evaluated again (the
	// alerts come from the home).
	PutGuidance(gardenID uint64, g Guidance) error
}

// ReplicaStore keeps the replicas and, per site, the last sequence applied from it.
type ReplicaStore interface {
	// ReplicaCursor is the last sequence applied from site (0: none yet).
	ReplicaCursor(site uint32) (uint64, error)
	// ApplyReplica runs fn in one write transaction: fn gets the site's cursor, writes
	// through w and returns the new cursor, which is stored in the same transaction.
	// fn may run more than once (a retried transaction) and must do nothing else.
	// Removed lists what the deletions left outside the database.
	ApplyReplica(site uint32, siteName string, fn func(w ReplicaWriter, cursor uint64) (uint64, error)) (Removed, error)
}

// ReplicaUsername is the name a replica user of site takes here when its home's name
// is taken: the first of name@SITE and name@SITE.ID (IDs are unique, so the last
// one is free unless someone picked it on purpose).
func ReplicaUsername(name, site string, id uint64, try int) string {
	switch try {
	case 0:
		return name
	case 1:
		return name + "@" + site
	}
	return fmt.Sprintf("%s@%s.%d", name, site, id)
}

// ReplicaUsernameTries is how many names ReplicaUsername offers.
const ReplicaUsernameTries = 3

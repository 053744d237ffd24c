package store

import (
	"context"
	"errors"
	"io"
	"time"
)

// The operations the server needs, as small interfaces by concern. Two backends
// implement them: store/bolt (an embedded file, one process) and store/postgres (any
// number of nodes on one database). Both apply the rules of this package (rules.go,
// the validation of each type) and keep the same semantics: the same sentinel errors,
// orderings and rules (the last admin, the cascades, the download queue's retries);
// store/storetest holds the contract suite that runs against both.
//
// Methods take no context: each backend bounds its own work (bbolt by its file lock,
// PostgreSQL by a per-operation deadline), so a caller never waits unboundedly. Only
// streaming image content and whole-store archives take one, since their duration
// follows the client or the amount of data.

// ErrUnavailable: the database cannot be reached or did not answer in time. The
// operation may or may not have been applied when it was a write; the caller answers
// 503 and the client retries.
var ErrUnavailable = errors.New("database unavailable")

// AccountStore keeps users, their tokens and their widgets documents.
type AccountStore interface {
	CreateUser(in NewUser) (User, error)
	UserByID(id uint64) (User, error)
	UserByUsername(username string) (User, error)
	CreateLoginToken(verified User, digest [DigestSize]byte, expiry time.Time) error
	CheckUsernameFree(name string, id uint64) error
	UpdateUser(id uint64, up UserUpdate) (User, error)
	ListUsers() ([]User, error)
	// ReplacePasswordHash swaps the user's stored hash for a new hash of the same
	// password (an imported Django hash upgraded after a login verified it), only if
	// the stored hash is still old, and reports whether it did. Unlike a password
	// change it keeps every token: the password is the same.
	ReplacePasswordHash(userID uint64, old, replacement string) (bool, error)
	// PasswordHashKinds lists the kinds of password hash the accounts hold (HashKind:
	// algorithm and cost parameters), by kind, each with how many accounts hold one
	// and one of them; unusable and unreadable hashes are left out.
	PasswordHashKinds() ([]HashKindCount, error)

	CreateToken(userID uint64, digest [DigestSize]byte, expiry time.Time) error
	Authenticate(digest [DigestSize]byte) (User, error)
	RevokeToken(digest [DigestSize]byte) error
	RevokeUserTokens(userID uint64, keep []byte) (int, error)
	SweepExpiredTokens() (int, error)
	ListTokens() ([]Token, error)

	SaveWidgets(userID uint64, doc []byte) error
	Widgets(userID uint64) ([]byte, error)
}

// CompanyStore keeps companies and their gardens. Deleting one removes everything
// that hangs off it and reports what lives outside the database (Removed).
type CompanyStore interface {
	CreateCompany(creatorID uint64, name string) (Company, error)
	Company(id uint64) (Company, error)
	Companies() ([]Company, error)
	CompaniesOfUser(userID uint64) ([]Company, error)
	DeleteCompany(id uint64) (Removed, error)

	CreateGarden(companyID uint64, name string) (Garden, error)
	Garden(id uint64) (Garden, error)
	Gardens() ([]Garden, error)
	GardensVisibleTo(userID uint64) ([]Garden, error)
	GardensOfCompany(companyID uint64) ([]Garden, error)
	CompanyGardensVisibleTo(companyID, userID uint64) ([]Garden, error)
	DeleteGarden(companyID, gardenID uint64) (Removed, error)
}

// PermissionStore keeps company and garden permissions and resolves what a user holds
// on a record in the same read that loads it.
type PermissionStore interface {
	SetCompanyPermission(companyID, actorID uint64, username string, level Level) (CompanyPermission, error)
	RemoveCompanyPermission(companyID, actorID uint64, username string) (bool, error)
	SetGardenPermission(gardenID, actorID uint64, username string, level Level) (GardenPermission, error)
	RemoveGardenPermission(gardenID, actorID uint64, username string) (bool, error)
	CompanyPermissions(companyID uint64) ([]Permission, error)
	GardenPermissions(gardenID uint64) ([]Permission, error)
	ListPermissions() (PermissionList, error)

	CompanyAccess(companyID, userID uint64) (Company, Access, error)
	GardenAccess(companyID, gardenID, userID uint64) (Garden, Access, error)
	BedAccess(companyID, gardenID, bedID, userID uint64) (Garden, Bed, Access, error)
}

// BedStore keeps beds and the plant positions computed for their projects.
type BedStore interface {
	CreateBed(gardenID uint64, uuid, name string) (Bed, error)
	// CreateBedUpTo is CreateBed for a garden that may have at most maxBeds beds (0:
	// no limit): one more is ErrTooManyBeds, checked in the same transaction as the
	// insert. A garden that has more already keeps them.
	CreateBedUpTo(gardenID uint64, uuid, name string, maxBeds int) (Bed, error)
	// CreateBedFor is CreateBedUpTo for a user, who may be refused a project other
	// gardens have beds of: in the same transaction it reads those beds, each with
	// what userID holds on its garden, and calls allow with them (none: allow is not
	// called); an error of allow is returned as it is and nothing is written. allow
	// runs inside the transaction, perhaps more than once: it must only decide.
	CreateBedFor(userID, gardenID uint64, uuid, name string, maxBeds int, allow func([]ProjectBed) error) (Bed, error)
	Bed(gardenID, bedID uint64) (Bed, error)
	BedsOfGarden(gardenID uint64) ([]Bed, error)
	// BedsOfProject returns the beds registered for a project, in every garden, by
	// ascending id (through an index on the project).
	BedsOfProject(uuid string) ([]Bed, error)
	DeleteBed(gardenID, bedID uint64) (Removed, error)
	Beds() ([]Bed, error)
	BedStatuses() ([]BedStatus, error)
	CloudState(project string) (CloudState, error)
}

// CloudQueue is the point-cloud download queue. DueCloudJobs serves one process;
// with several nodes on one database each takes work with ClaimCloudJobs instead, so
// that no two nodes download the same cloud at once.
type CloudQueue interface {
	EnqueueClouds(jobs []CloudJob, rearm time.Duration) ([]CloudJob, error)
	DueCloudJobs(limit int) (due []CloudJob, next time.Time, pending int, err error)
	CompleteCloudJob(p PlantPosition) error
	RecordCloudFailure(project, cloud string, in CloudInputs, reason string, p RetryPolicy) (CloudJob, bool, error)
	CloudJobs() ([]CloudJob, error)
	// CloudQueueCounts counts the queued downloads: pending (due, backing off or
	// claimed) and failed (out of attempts, waiting to be re-armed).
	CloudQueueCounts() (pending, failed int, err error)

	ClaimCloudJobs(node string, limit int, lease time.Duration) (claimed []CloudJob, next time.Time, pending int, err error)
	RenewCloudClaim(node, project, cloud string, lease time.Duration) (bool, error)
	ReleaseCloudClaims(node string) (int, error)
}

// ImageRecords keeps which image a garden shows and the coordinates uploaded with it.
// The bytes live elsewhere (ImageContent) under the path the record holds.
type ImageRecords interface {
	SetGardenImage(gardenID uint64, path string, cs Coordinates) (old string, err error)
	GardenImage(gardenID uint64) (path string, cs Coordinates, err error)
	ImagePaths() (map[string]bool, error)
}

// ImageContent keeps the bytes of garden images under immutable paths: files under
// the data directory with bbolt (imagestore), rows of the database with PostgreSQL,
// so that nodes hold no state. An upload puts the content first, then points the
// garden at it (ImageRecords.SetGardenImage), then removes the old content: a record
// never points at missing content, and a crash leaves at most unreferenced content,
// which the sweep removes.
type ImageContent interface {
	// PutImage stores everything r yields as a new image of the garden and returns its
	// path and size. The content is streamed, never held whole. gardenID 0 stores
	// content for a garden that does not exist yet (an import's): SetGardenImage or
	// ApplyImport attaches it.
	PutImage(ctx context.Context, gardenID uint64, r io.Reader) (path string, size int64, err error)
	// OpenImage streams the content at path; ErrNotFound when there is none.
	OpenImage(ctx context.Context, path string) (io.ReadCloser, int64, error)
	// RemoveImage deletes the content at path; content that is gone already, or that a
	// garden still shows, is left as it is without error.
	RemoveImage(ctx context.Context, path string) error
}

// Maintenance is what the operator's commands and the tests need of a backend.
type Maintenance interface {
	// Now is the store's clock.
	Now() time.Time
	// Ping checks that the database answers (readiness).
	Ping() error
	// DataID is the database's identity: a random id made the first time it is
	// asked for (created reports that this call made it) and kept for good, archives
	// and backups included. Files kept beside the database (images, point clouds) are
	// marked with it, so that no sweep deletes files of another database.
	DataID() (id string, created bool, err error)
	// Stats counts the stored records by kind.
	Stats() (Stats, error)
	// Check verifies the storage itself (bbolt's page check; PostgreSQL's schema).
	Check() error
	// CheckIndexes verifies the relations between records (the last-admin rule holds,
	// no position outlives its project, …) and returns every problem found, joined.
	CheckIndexes() error
	Close() error
}

// Backend is every concern together: what a whole server runs on. Consumers should
// name the smaller interfaces they need.
type Backend interface {
	AccountStore
	CompanyStore
	PermissionStore
	BedStore
	CloudQueue
	ImageRecords
	Maintenance
	Archiver
	Importer
	LogStore
	// Sync between sites (docs/sync.md).
	ChangeFeed
	BedValueStore
	ReplicaStore
	HistoryStore
	AlertStore
	HistoryReplication
	LeaseStore
	ListPager
}

// Importer brings another system's records in (store/importplan.go; the PlantMap
// migration, server/plantmap).
type Importer interface {
	// PlanImport works out what ApplyImport would do, without writing.
	PlanImport(in Import) (ImportPlan, error)
	// ApplyImport writes the new records of in, in one transaction (PrepareImport
	// says what it refuses).
	ApplyImport(in Import, expect ImportPlan, images map[uint64]string) (ImportPlan, error)
}

// Shared is a backend that several nodes use at once (PostgreSQL). With one, a node
// keeps no state of its own: the server keeps image content in it rather than in
// files, takes the secrets every node must hold alike from it, and sweeps content no
// garden shows; per-node caches are only ever caches.
type Shared interface {
	ImageContent
	// Secret returns the install's secret of that name: size random bytes, made by
	// the first node that asks and the same for every node after.
	Secret(name string, size int) ([]byte, error)
	// SweepUnreferencedImages deletes content that no garden shows and that was put
	// more than grace ago (uploads that died half-way on some node), and returns how
	// many images it deleted.
	SweepUnreferencedImages(ctx context.Context, grace time.Duration) (int, error)
}

// Snapshotter is a backend kept in one file of the data directory (bbolt): a backup
// copies the file, consistent, as it is.
type Snapshotter interface {
	// SnapshotName is the file's name in the data directory, and in a backup.
	SnapshotName() string
	// WriteSnapshot writes a consistent copy of the whole file to w.
	WriteSnapshot(w io.Writer) (int64, error)
	// SchemaVersion is the schema version of the file.
	SchemaVersion() uint64
}

// TxObserver is a backend that reports how long each of its transactions took
// (metrics). Set the observer before the backend is shared between goroutines.
type TxObserver interface {
	ObserveTx(fn func(write bool, d time.Duration))
}

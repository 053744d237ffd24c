package store

import (
	"fmt"
	"time"
)

// The change feed is the store's outbox for replication between sites (server/
// sitesync, docs/sync.md). Once it is on, every write that changes a record homed at
// this site appends a Change in the same transaction, so nothing a client was told
// is stored can be missed by the sync loop, whatever crashes when. A change names
// the record, not its content: the sync loop reads the record as it is when it sends
// it (a deleted record is sent as a deletion), so many changes of one record cost one
// message, and the feed stays small while the uplink is down.
//
// A kind of record that replicates needs, besides its adapter in server/sitesync, a
// line in each backend's write methods that records its changes (recordChange) and
// its ids in each backend's snapshot (StartChangeFeed), parents before children.

// Kinds of change besides the archive kinds that replicate (KindUser, KindCompany,
// KindGarden, KindBed, KindCompanyPermission, KindGardenPermission, KindLog,
// KindPhoto: ID the photo, Ref its log). A user's widgets document travels as part of
// the user.
const (
	// KindGardenImage is a garden's picture and its coordinates (ID: the garden, Ref:
	// its company).
	KindGardenImage = "garden_image"
	// KindBedValues is the latest values a bed's spatial server gave (ID: the bed,
	// Ref: its garden).
	KindBedValues = "bed_values"
)

// SnapshotKinds are the kinds a first snapshot enqueues, in this order: a record
// only refers to records of kinds before it.
var SnapshotKinds = []string{
	KindUser, KindCompany, KindGarden, KindGardenImage, KindBed,
	KindCompanyPermission, KindGardenPermission, KindBedValues, KindLog,
	KindPhoto,
	// After the logs an alert's task names.
	KindHistory, KindAlert, KindGuidance,
}

// Change is one entry of the change feed: the record of kind with id changed (or was
// deleted) when the store's clock read At. Ref is the record's second key where one
// id does not find it: the company of a garden, the garden of a bed, the user of a
// permission (ID then being its company or garden).
type Change struct {
	Seq     uint64    `json:"seq"`
	Kind    string    `json:"kind"`
	ID      uint64    `json:"id"`
	Ref     uint64    `json:"ref,omitempty"`
	Deleted bool      `json:"deleted,omitempty"`
	At      time.Time `json:"at"`
}

func (c Change) String() string {
	return fmt.Sprintf("change %d: %s %d/%d", c.Seq, c.Kind, c.ID, c.Ref)
}

// ChangeStats describe the feed: whether it is on, how many changes it holds, the
// time of the oldest and the sequence of the newest ever appended.
type ChangeStats struct {
	On      bool
	Records int
	Oldest  time.Time
	LastSeq uint64
}

// ChangeFeed is the outbox. One sync loop at a time reads it (several nodes of one
// database run it under a lease): CompactChanges is only safe from the reader.
type ChangeFeed interface {
	// StartChangeFeed turns the feed on. When it was off, the same transaction
	// appends a change for every record homed here (SnapshotKinds order), so that the
	// feed then holds everything: the first snapshot. It reports whether it did.
	StartChangeFeed() (started bool, err error)
	// ChangesAfter returns up to limit changes with a sequence above after, in
	// order. A change a transaction appended is visible only with every change of a
	// lower sequence: sequences follow commits.
	ChangesAfter(after uint64, limit int) ([]Change, error)
	// TrimChanges deletes the changes up to and including seq (the other side has
	// them) and reports how many.
	TrimChanges(seq uint64) (int, error)
	// CompactChanges deletes every change above after that has an earlier change of
	// the same record above after: the earlier one sends the record as it is when it
	// is sent, which includes the later change. It keeps the order of first changes
	// (parents before children) and reports how many it deleted.
	CompactChanges(after uint64) (int, error)
	// ChangeStats describes the feed.
	ChangeStats() (ChangeStats, error)
}

// Site ids (docs/sync.md). A record keeps its id at its home; at every other site its
// id is home_site << SiteShift | home_id. Local ids stay below LocalIDLimit, so the
// home of every record is in its id, and every id stays below 2^53.
const (
	SiteShift    = 40
	LocalIDLimit = uint64(1) << SiteShift
	// MaxSite is the largest site number: 13 bits above the local id.
	MaxSite = 8191
	// OfficeSite is the head office's site number, OfficeName its name.
	OfficeSite = 1
	OfficeName = "office"
)

// HomeSite is the site a record with this id at this site is homed at: 0 for a
// record homed here.
func HomeSite(id uint64) uint32 { return uint32(id >> SiteShift) }

// IsLocal reports whether a record with this id is homed here.
func IsLocal(id uint64) bool { return id < LocalIDLimit }

// GlobalID is the id a record of site with id at its home has everywhere but there.
func GlobalID(site uint32, id uint64) uint64 {
	if !IsLocal(id) {
		return id
	}
	return uint64(site)<<SiteShift | id
}

// LocalID is the id a record known everywhere as global has at site: its home id at
// its home, global elsewhere.
func LocalID(site uint32, global uint64) uint64 {
	if HomeSite(global) == site {
		return global & (LocalIDLimit - 1)
	}
	return global
}

// CheckHome refuses to change a replica outside the sync (an operator's command): it
// is ErrConflict naming the record's home site by number.
func CheckHome(kind string, id uint64) error {
	if site := HomeSite(id); site != 0 {
		return fmt.Errorf("%w: %s %d is managed at site number %d; change it there", ErrConflict, kind, id, site)
	}
	return nil
}

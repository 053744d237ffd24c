package bolt

import (
	"fmt"
	"io"
	"path/filepath"
	"time"

	bbolt "go.etcd.io/bbolt"
)

// Bucket names. Index buckets hold composite keys and empty or tiny values.
var (
	bucketMeta      = []byte("meta")
	bucketUsers     = []byte("users")     // id → userRecord
	bucketUsernames = []byte("usernames") // username → id
	// bucketUsernameLooks indexes what names look like: look|0|userID → nil, one entry
	// per store.UsernameLooks key.
	bucketUsernameLooks = []byte("username_looks")
	bucketTokens        = []byte("tokens")      // sha256(token) → tokenRecord (binary)
	bucketUserToks      = []byte("user_tokens") // userID|sha256 → nil
	bucketWidgets       = []byte("widgets")     // userID → raw JSON

	bucketCompanies      = []byte("companies")         // id → Company
	bucketGardens        = []byte("gardens")           // id → Garden
	bucketCompanyGardens = []byte("company_gardens")   // companyID|gardenID → nil
	bucketGardenCoords   = []byte("garden_coords")     // gardenID → Coordinates
	bucketPermCompany    = []byte("perm_company")      // companyID|userID → permValue; ids from its sequence
	bucketUserCompany    = []byte("perm_user_company") // userID|companyID → nil
	bucketPermGarden     = []byte("perm_garden")       // gardenID|userID → permValue; ids from its sequence
	bucketUserGarden     = []byte("perm_user_garden")  // userID|companyID|gardenID → nil
	bucketBeds           = []byte("beds")              // id → bedRecord
	bucketGardenBeds     = []byte("garden_beds")       // gardenID|bedID → nil
	bucketBedUUIDs       = []byte("bed_uuids")         // uuid|0|gardenID → bedID

	bucketPositions = []byte("plant_positions") // project|0|cloud → PlantPosition
	bucketCloudJobs = []byte("pc_queue")        // project|0|cloud → CloudJob

	bucketImportMap = []byte("import_map") // source|0|kind|0|sourceID → id (import.go)

	// The logbook (logs.go, photos.go).
	bucketLogs         = []byte("logs")           // id → store.ArchivedLog
	bucketLogIndex     = []byte("log_index")      // gardenID|term|0|^at|^id → nil
	bucketTasks        = []byte("log_tasks")      // assigneeID|at|id → gardenID, pending tasks
	bucketPhotos       = []byte("photos")         // id → store.Photo
	bucketLogPhotos    = []byte("log_photos")     // logID|photoID → nil
	bucketPlantIDs     = []byte("plant_ids")      // project|0|name → id
	bucketPlantIDNames = []byte("plant_id_names") // project|0|id → name

	// Replication between sites (server/sitesync, changes.go, replica.go).
	bucketChanges        = []byte("changes")         // seq → store.Change; its sequence numbers them
	bucketBedValues      = []byte("bed_values")      // bedID → store.BedValues
	bucketReplicaCursors = []byte("replica_cursors") // site → last sequence applied from it

	// History, alerts and guidance (history.go, alerts.go).
	bucketHistorySeries = []byte("history_series") // bedID|plant → seriesRecord ("" for the bed)
	bucketHistoryPoints = []byte("history_points") // seriesID|day → chunk (store.EncodeChunk)
	bucketAlerts        = []byte("alerts")         // id → alertRecord
	bucketAlertsOpen    = []byte("alerts_open")    // bedID|plant|0|kind → id, open alerts
	bucketGardenAlerts  = []byte("garden_alerts")  // gardenID|0|id (open), gardenID|1|^closed|id → nil
	bucketBedAlerts     = []byte("bed_alerts")     // bedID|id → nil
	bucketGuidance      = []byte("guidance")       // gardenID → store.Guidance
	bucketLeases        = []byte("leases")         // name → leaseRecord
)

// allBuckets are created on open; a feature adds its buckets here.
var allBuckets = [][]byte{
	bucketMeta, bucketUsers, bucketUsernames, bucketUsernameLooks, bucketTokens, bucketUserToks, bucketWidgets,
	bucketCompanies, bucketGardens, bucketCompanyGardens, bucketGardenCoords,
	bucketPermCompany, bucketUserCompany, bucketPermGarden, bucketUserGarden,
	bucketBeds, bucketGardenBeds, bucketBedUUIDs,
	bucketPositions, bucketCloudJobs,
	bucketImportMap,
	bucketLogs, bucketLogIndex, bucketTasks, bucketPhotos, bucketLogPhotos, bucketPlantIDs, bucketPlantIDNames,
	bucketChanges, bucketBedValues, bucketReplicaCursors,
	bucketHistorySeries, bucketHistoryPoints, bucketAlerts, bucketAlertsOpen, bucketGardenAlerts, bucketBedAlerts,
	bucketGuidance, bucketLeases,
}

var keySchemaVersion = []byte("schema_version")

// migrations[i] upgrades a database from schema version i to i+1. Append only: a
// released migration is never edited.
var migrations = []func(tx *bbolt.Tx) error{
	// 0 → 1: the initial layout; buckets are created before migrations run.
	func(*bbolt.Tx) error { return nil },
	// 1 → 2: index what every username looks like (usernames.go).
	indexUsernameLooks,
	// 2 → 3: re-index it with Unicode's confusables, case-folded (usernames.go).
	reindexUsernameLooks,
	// 3 → 4: the logbook's buckets (created on open); the version keeps a gardend
	// that does not know them from opening the file and orphaning their records.
	func(*bbolt.Tx) error { return nil },
	// 4 → 5: history, alerts, guidance and leases (buckets created on open), kept
	// from a gardend that does not know them in the same way.
	func(*bbolt.Tx) error { return nil },
	// 5 → 6: the change feed, bed values and replica cursors of sync between sites
	// (changes.go); their buckets are created before migrations run. The version
	// keeps an older gardend, which would write without recording changes, off the
	// file.
	func(*bbolt.Tx) error { return nil },
}

// lookIndexVersion is the confusables release the look index of the newest schema is
// built with: a new table changes the looks, and needs a migration that re-indexes.
const lookIndexVersion = "15.0.0"

// SchemaVersion is the version this build writes.
func SchemaVersion() uint64 { return uint64(len(migrations)) }

func (s *Store) migrate() error { return s.migrateWith(migrations) }

// migrateWith brings the database to schema version len(steps). Before a step runs on
// a database that has a schema already, the whole file is copied next to it
// (MigrationBackupName): a migration that goes wrong, or a binary that must be rolled
// back, then still has the data as it was. Without that copy nothing is migrated.
func (s *Store) migrateWith(steps []func(tx *bbolt.Tx) error) error {
	var version uint64
	complete := true // every bucket exists
	if err := s.db.View(func(tx *bbolt.Tx) error {
		if meta := tx.Bucket(bucketMeta); meta != nil {
			if v := meta.Get(keySchemaVersion); v != nil {
				version = btoi(v)
			}
		}
		for _, name := range allBuckets {
			complete = complete && tx.Bucket(name) != nil
		}
		return nil
	}); err != nil {
		return err
	}
	if complete && version == uint64(len(steps)) {
		// Nothing to do: no write transaction, whose two fsyncs would delay every
		// start (about 5 ms on a VM's disk, more on an SD card).
		return nil
	}
	if version > 0 && version < uint64(len(steps)) {
		path, err := s.backupBeforeMigration(version)
		if err != nil {
			return fmt.Errorf("back up the database before migrating schema %d → %d (nothing was changed): %w", version, len(steps), err)
		}
		s.migrationBackup = path
	}
	return s.db.Update(func(tx *bbolt.Tx) error {
		for _, name := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		meta := tx.Bucket(bucketMeta)
		var version uint64
		if v := meta.Get(keySchemaVersion); v != nil {
			version = btoi(v)
		}
		if version > uint64(len(steps)) {
			return fmt.Errorf("database schema version %d is newer than this gardend (%d): upgrade gardend", version, len(steps))
		}
		for ; version < uint64(len(steps)); version++ {
			if err := steps[version](tx); err != nil {
				return fmt.Errorf("migrate schema %d → %d: %w", version, version+1, err)
			}
		}
		return meta.Put(keySchemaVersion, itob(version))
	})
}

// MigrationBackupName is the copy of the database file taken before migrating it from
// schema version from, at t: gardend.db.schema-1-20261122T080000Z.bak.
func MigrationBackupName(from uint64, t time.Time) string {
	return fmt.Sprintf("%s.schema-%d-%s.bak", FileName, from, t.UTC().Format("20060102T150405Z"))
}

// backupBeforeMigration writes a consistent copy of the database beside it: under a
// temporary name, synced, renamed, and the directory synced.
func (s *Store) backupBeforeMigration(from uint64) (string, error) {
	path := filepath.Join(filepath.Dir(s.db.Path()), MigrationBackupName(from, s.now()))
	err := writeFileAtomic(path, ".migration-*.tmp", func(w io.Writer) error {
		_, err := s.WriteSnapshot(w)
		return err
	})
	if err != nil {
		return "", err
	}
	return path, nil
}

// MigrationBackup is the copy of the database Open took before migrating its schema,
// or "" when it migrated nothing.
func (s *Store) MigrationBackup() string { return s.migrationBackup }

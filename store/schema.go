package store

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Bucket names. Index buckets hold composite keys and empty or tiny values.
var (
	bucketMeta      = []byte("meta")
	bucketUsers     = []byte("users")     // id → userRecord
	bucketUsernames = []byte("usernames") // username → id
	// bucketUsernameLooks indexes what names look like: skeleton|0|userID → nil.
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
)

// allBuckets are created on open; a feature adds its buckets here.
var allBuckets = [][]byte{
	bucketMeta, bucketUsers, bucketUsernames, bucketUsernameLooks, bucketTokens, bucketUserToks, bucketWidgets,
	bucketCompanies, bucketGardens, bucketCompanyGardens, bucketGardenCoords,
	bucketPermCompany, bucketUserCompany, bucketPermGarden, bucketUserGarden,
	bucketBeds, bucketGardenBeds, bucketBedUUIDs,
	bucketPositions, bucketCloudJobs,
}

var keySchemaVersion = []byte("schema_version")

// migrations[i] upgrades a database from schema version i to i+1. Append only: a
// released migration is never edited.
var migrations = []func(tx *bolt.Tx) error{
	// 0 → 1: the initial layout; buckets are created before migrations run.
	func(*bolt.Tx) error { return nil },
	// 1 → 2: index what every username looks like (usernames.go).
	indexUsernameLooks,
}

// SchemaVersion is the version this build writes.
func SchemaVersion() uint64 { return uint64(len(migrations)) }

func (s *Store) migrate() error {
	return s.db.Update(func(tx *bolt.Tx) error {
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
		if version > SchemaVersion() {
			return fmt.Errorf("database schema version %d is newer than this gardend (%d): upgrade gardend", version, SchemaVersion())
		}
		for ; version < SchemaVersion(); version++ {
			if err := migrations[version](tx); err != nil {
				return fmt.Errorf("migrate schema %d → %d: %w", version, version+1, err)
			}
		}
		return meta.Put(keySchemaVersion, itob(version))
	})
}

package store

import (
	"slices"

	bolt "go.etcd.io/bbolt"
)

// Removed is what a committed deletion leaves to clean up outside the database.
type Removed struct {
	// ImagePaths are the image files of the removed gardens, relative to the data
	// directory.
	ImagePaths []string
	// BedUUIDs are the spatial-server projects of removed beds that no remaining bed
	// refers to, so data cached for them can go.
	BedUUIDs []string
}

// settle keeps in BedUUIDs, once each, only the projects no bed refers to any more.
// It runs at the end of the deleting transaction, so it sees the final state.
func (r *Removed) settle(tx *bolt.Tx) {
	slices.Sort(r.BedUUIDs)
	r.BedUUIDs = slices.Compact(r.BedUUIDs)
	byUUID := tx.Bucket(bucketBedUUIDs)
	r.BedUUIDs = slices.DeleteFunc(r.BedUUIDs, func(uuid string) bool {
		return anyUnder(byUUID, append([]byte(uuid), 0))
	})
}

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
	// refers to. Their plant positions and queued downloads went with the deletion;
	// files kept for them (point clouds) can go too.
	BedUUIDs []string
}

// deleteInTx runs del in one write transaction and settles what it recorded in the same
// transaction, so no deletion can forget to. On error nothing is removed.
func (s *Store) deleteInTx(del func(tx *bolt.Tx, r *Removed) error) (Removed, error) {
	var r Removed
	err := s.db.Update(func(tx *bolt.Tx) error {
		if err := del(tx, &r); err != nil {
			return err
		}
		return r.settle(tx)
	})
	if err != nil {
		return Removed{}, err
	}
	return r, nil
}

// settle keeps in BedUUIDs, once each, only the projects no bed refers to any more,
// and deletes what the database holds for those. It runs at the end of the deleting
// transaction, so it sees the final state.
func (r *Removed) settle(tx *bolt.Tx) error {
	slices.Sort(r.BedUUIDs)
	r.BedUUIDs = slices.Compact(r.BedUUIDs)
	r.BedUUIDs = slices.DeleteFunc(r.BedUUIDs, func(uuid string) bool {
		return projectReferenced(tx, uuid)
	})
	for _, uuid := range r.BedUUIDs {
		if err := dropProjectClouds(tx, uuid); err != nil {
			return err
		}
	}
	return nil
}

package bolt

import (
	"slices"

	bbolt "go.etcd.io/bbolt"

	"github.com/gardend/gardend/store"
)

// deleteInTx runs del in one write transaction and settles what it recorded in the same
// transaction, so no deletion can forget to. On error nothing is removed.
func (s *Store) deleteInTx(del func(tx *bbolt.Tx, r *store.Removed) error) (store.Removed, error) {
	var r store.Removed
	err := s.db.Update(func(tx *bbolt.Tx) error {
		if err := del(tx, &r); err != nil {
			return err
		}
		return settle(tx, &r)
	})
	if err != nil {
		return store.Removed{}, err
	}
	return r, nil
}

// settle keeps in r.BedUUIDs, once each, only the projects no bed refers to any more,
// and deletes what the database holds for those. It runs at the end of the deleting
// transaction, so it sees the final state.
func settle(tx *bbolt.Tx, r *store.Removed) error {
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

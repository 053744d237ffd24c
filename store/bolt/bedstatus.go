package bolt

import (
	bbolt "go.etcd.io/bbolt"

	"github.com/gardend/gardend/store"
)

// Beds returns every bed of every garden, by ascending id.
func (s *Store) Beds() ([]store.Bed, error) {
	out := []store.Bed{}
	err := s.db.View(func(tx *bbolt.Tx) error {
		return eachUnder(tx, bucketBeds, nil, func(r bedRecord) { out = append(out, r.bed()) })
	})
	return out, err
}

// BedStatuses lists every bed with its counts, in one read transaction.
func (s *Store) BedStatuses() ([]store.BedStatus, error) {
	out := []store.BedStatus{}
	err := s.db.View(func(tx *bbolt.Tx) error {
		var beds []store.Bed
		if err := eachUnder(tx, bucketBeds, nil, func(r bedRecord) { beds = append(beds, r.bed()) }); err != nil {
			return err
		}
		for _, b := range beds {
			st := store.BedStatus{Bed: b, Garden: b.Garden}
			prefix := projectPrefix(b.UUID)
			err := eachUnder(tx, bucketPositions, prefix, func(p store.PlantPosition) {
				if p.Position != nil {
					st.Positions++
				} else {
					st.NoPosition++
				}
			})
			if err != nil {
				return err
			}
			err = eachUnder(tx, bucketCloudJobs, prefix, func(j store.CloudJob) {
				if j.Failed {
					st.Failed++
				} else {
					st.Queued++
				}
			})
			if err != nil {
				return err
			}
			out = append(out, st)
		}
		return nil
	})
	return out, err
}

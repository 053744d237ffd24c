package store

import (
	bolt "go.etcd.io/bbolt"
)

// Beds returns every bed of every garden, by ascending id.
func (s *Store) Beds() ([]Bed, error) {
	out := []Bed{}
	err := s.db.View(func(tx *bolt.Tx) error {
		return eachUnder(tx, bucketBeds, nil, func(r bedRecord) { out = append(out, r.bed()) })
	})
	return out, err
}

// BedStatus is a bed with the state of its project's plant positions, for
// `gardend inspect beds`.
type BedStatus struct {
	Bed
	Garden uint64 `json:"garden"`
	// Positions counts clouds with a computed position, NoPosition those that yield
	// none; Queued counts downloads waiting, Failed those that ran out of attempts.
	Positions  int `json:"positions"`
	NoPosition int `json:"no_position"`
	Queued     int `json:"queued"`
	Failed     int `json:"failed"`
}

// BedStatuses lists every bed with its counts, in one read transaction.
func (s *Store) BedStatuses() ([]BedStatus, error) {
	out := []BedStatus{}
	err := s.db.View(func(tx *bolt.Tx) error {
		var beds []Bed
		if err := eachUnder(tx, bucketBeds, nil, func(r bedRecord) { beds = append(beds, r.bed()) }); err != nil {
			return err
		}
		for _, b := range beds {
			st := BedStatus{Bed: b, Garden: b.Garden}
			prefix := projectPrefix(b.UUID)
			err := eachUnder(tx, bucketPositions, prefix, func(p PlantPosition) {
				if p.Position != nil {
					st.Positions++
				} else {
					st.NoPosition++
				}
			})
			if err != nil {
				return err
			}
			err = eachUnder(tx, bucketCloudJobs, prefix, func(j CloudJob) {
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

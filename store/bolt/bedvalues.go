package bolt

import (
	"errors"

	bbolt "go.etcd.io/bbolt"

	"github.com/gardend/gardend/store"
)

var _ store.BedValueStore = (*Store)(nil)

// PutBedValues replaces the bed's latest values.
func (s *Store) PutBedValues(v store.BedValues) error {
	if err := v.Validate(); err != nil {
		return err
	}
	v.At = v.At.UTC()
	return s.db.Update(func(tx *bbolt.Tx) error {
		if _, err := bedOf(tx, v.Garden, v.Bed); err != nil {
			return err
		}
		if err := putJSON(tx.Bucket(bucketBedValues), itob(v.Bed), v); err != nil {
			return err
		}
		return recordChange(tx, s.now(), store.KindBedValues, v.Bed, v.Garden, false)
	})
}

// BedValuesOfGarden returns the values of the garden's beds, by bed id.
func (s *Store) BedValuesOfGarden(gardenID uint64) ([]store.BedValues, error) {
	out := []store.BedValues{}
	err := s.db.View(func(tx *bbolt.Tx) error {
		if _, err := getGarden(tx, gardenID); err != nil {
			return err
		}
		b := tx.Bucket(bucketBedValues)
		for _, bedID := range idsUnder(tx.Bucket(bucketGardenBeds), itob(gardenID)) {
			var v store.BedValues
			if err := getJSON(b, itob(bedID), &v); err == nil {
				out = append(out, v)
			} else if !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		return nil
	})
	return out, err
}

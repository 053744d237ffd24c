package bolt

import (
	bbolt "go.etcd.io/bbolt"

	"github.com/gardend/gardend/store"
)

func companyAccess(tx *bbolt.Tx, companyID, userID uint64) (store.Access, error) {
	level, err := levelAt(tx.Bucket(bucketPermCompany), pairKey(companyID, userID))
	if err != nil {
		return store.Access{}, err
	}
	return store.Access{
		Company:      level,
		GardenMember: anyUnder(tx.Bucket(bucketUserGarden), pairKey(userID, companyID)),
	}, nil
}

func gardenAccess(tx *bbolt.Tx, g store.Garden, userID uint64) (store.Access, error) {
	a, err := companyAccess(tx, g.Company, userID)
	if err != nil {
		return store.Access{}, err
	}
	a.Garden, err = levelAt(tx.Bucket(bucketPermGarden), pairKey(g.ID, userID))
	return a, err
}

// CompanyAccess returns the company and what the user holds on it.
func (s *Store) CompanyAccess(companyID, userID uint64) (store.Company, store.Access, error) {
	var (
		c store.Company
		a store.Access
	)
	err := s.db.View(func(tx *bbolt.Tx) (err error) {
		if c, err = getCompany(tx, companyID); err != nil {
			return err
		}
		a, err = companyAccess(tx, companyID, userID)
		return err
	})
	return c, a, err
}

// GardenAccess returns a garden of the company and what the user holds on both. A
// garden of another company is ErrNotFound.
func (s *Store) GardenAccess(companyID, gardenID, userID uint64) (store.Garden, store.Access, error) {
	var (
		g store.Garden
		a store.Access
	)
	err := s.db.View(func(tx *bbolt.Tx) (err error) {
		if g, err = gardenOf(tx, companyID, gardenID); err != nil {
			return err
		}
		a, err = gardenAccess(tx, g, userID)
		return err
	})
	return g, a, err
}

// BedAccess is GardenAccess that also loads a bed of the garden (ErrNotFound when the
// bed belongs to another garden).
func (s *Store) BedAccess(companyID, gardenID, bedID, userID uint64) (store.Garden, store.Bed, store.Access, error) {
	var (
		g store.Garden
		b store.Bed
		a store.Access
	)
	err := s.db.View(func(tx *bbolt.Tx) (err error) {
		if g, err = gardenOf(tx, companyID, gardenID); err != nil {
			return err
		}
		if b, err = bedOf(tx, gardenID, bedID); err != nil {
			return err
		}
		a, err = gardenAccess(tx, g, userID)
		return err
	})
	return g, b, a, err
}

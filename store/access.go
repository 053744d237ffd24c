package store

import bolt "go.etcd.io/bbolt"

// Access is what one user holds on a company and on one of its gardens. The server's
// access model turns it into a role; the store only reports it, in the same read
// transaction that loads the record, so every request needs one lookup.
type Access struct {
	// Company is the user's company permission, "" when none.
	Company Level
	// Garden is the user's permission on the garden asked about, "" when none (or when
	// no garden was asked about).
	Garden Level
	// GardenMember: the user holds a permission on some garden of the company.
	GardenMember bool
}

func companyAccess(tx *bolt.Tx, companyID, userID uint64) (Access, error) {
	level, err := levelAt(tx.Bucket(bucketPermCompany), pairKey(companyID, userID))
	if err != nil {
		return Access{}, err
	}
	return Access{
		Company:      level,
		GardenMember: anyUnder(tx.Bucket(bucketUserGarden), pairKey(userID, companyID)),
	}, nil
}

func gardenAccess(tx *bolt.Tx, g Garden, userID uint64) (Access, error) {
	a, err := companyAccess(tx, g.Company, userID)
	if err != nil {
		return Access{}, err
	}
	a.Garden, err = levelAt(tx.Bucket(bucketPermGarden), pairKey(g.ID, userID))
	return a, err
}

// CompanyAccess returns the company and what the user holds on it.
func (s *Store) CompanyAccess(companyID, userID uint64) (Company, Access, error) {
	var (
		c Company
		a Access
	)
	err := s.db.View(func(tx *bolt.Tx) (err error) {
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
func (s *Store) GardenAccess(companyID, gardenID, userID uint64) (Garden, Access, error) {
	var (
		g Garden
		a Access
	)
	err := s.db.View(func(tx *bolt.Tx) (err error) {
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
func (s *Store) BedAccess(companyID, gardenID, bedID, userID uint64) (Garden, Bed, Access, error) {
	var (
		g Garden
		b Bed
		a Access
	)
	err := s.db.View(func(tx *bolt.Tx) (err error) {
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

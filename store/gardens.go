package store

import (
	"bytes"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// Garden belongs to one company for its whole life (nothing moves a garden), which lets
// indexes carry the company id.
type Garden struct {
	ID   uint64 `json:"id"`
	Name string `json:"name"`
	// ImagePath is relative to the data directory ("images/….png"); nil without image.
	ImagePath *string `json:"image_path"`
	Company   uint64  `json:"company"`
}

// Validate checks the name: 1–128 characters, not blank.
func (g Garden) Validate() error { return checkName(g.Name) }

// CreateGarden stores a new garden of the company.
func (s *Store) CreateGarden(companyID uint64, name string) (Garden, error) {
	g := Garden{Name: name, Company: companyID}
	if err := g.Validate(); err != nil {
		return Garden{}, err
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		if _, err := getCompany(tx, companyID); err != nil {
			return err
		}
		gardens := tx.Bucket(bucketGardens)
		id, err := gardens.NextSequence()
		if err != nil {
			return err
		}
		g.ID = id
		if err := putJSON(gardens, itob(id), g); err != nil {
			return err
		}
		return tx.Bucket(bucketCompanyGardens).Put(pairKey(companyID, id), nil)
	})
	if err != nil {
		return Garden{}, err
	}
	return g, nil
}

func getGarden(tx *bolt.Tx, id uint64) (Garden, error) {
	return getRecord[Garden](tx, bucketGardens, "garden", id)
}

// gardenOf loads a garden addressed under a company: one of another company is
// ErrNotFound, as if it did not exist.
func gardenOf(tx *bolt.Tx, companyID, gardenID uint64) (Garden, error) {
	g, err := getGarden(tx, gardenID)
	if err != nil {
		return Garden{}, err
	}
	if g.Company != companyID {
		return Garden{}, fmt.Errorf("garden %d of company %d: %w", gardenID, companyID, ErrNotFound)
	}
	return g, nil
}

// Garden returns the garden with id, of whichever company.
func (s *Store) Garden(id uint64) (Garden, error) {
	var g Garden
	err := s.db.View(func(tx *bolt.Tx) (err error) {
		g, err = getGarden(tx, id)
		return err
	})
	return g, err
}

// Gardens returns every garden by id (a site admin's view).
func (s *Store) Gardens() ([]Garden, error) {
	out := []Garden{}
	err := s.db.View(func(tx *bolt.Tx) error {
		return eachUnder(tx, bucketGardens, nil, func(g Garden) { out = append(out, g) })
	})
	return out, err
}

// GardensVisibleTo returns every garden the user can read, each once, by id: all
// gardens of companies where the user holds a company permission, and the gardens
// with a garden permission of the user. The work follows the user's permissions, not
// the number of gardens stored.
func (s *Store) GardensVisibleTo(userID uint64) ([]Garden, error) {
	var out []Garden
	err := s.db.View(func(tx *bolt.Tx) error {
		member := map[uint64]bool{}
		var ids []uint64
		for _, companyID := range idsUnder(tx.Bucket(bucketUserCompany), itob(userID)) {
			member[companyID] = true
			ids = append(ids, idsUnder(tx.Bucket(bucketCompanyGardens), itob(companyID))...)
		}
		c := tx.Bucket(bucketUserGarden).Cursor()
		prefix := itob(userID)
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			// A garden of a member company is listed already.
			if !member[btoi(k[8:])] {
				ids = append(ids, btoi(k[16:]))
			}
		}
		slices.Sort(ids)
		var err error
		out, err = getEach(tx, getGarden, ids)
		return err
	})
	return out, err
}

// GardensOfCompany returns every garden of the company by id.
func (s *Store) GardensOfCompany(companyID uint64) ([]Garden, error) {
	var out []Garden
	err := s.db.View(func(tx *bolt.Tx) error {
		if _, err := getCompany(tx, companyID); err != nil {
			return err
		}
		var err error
		out, err = getEach(tx, getGarden, idsUnder(tx.Bucket(bucketCompanyGardens), itob(companyID)))
		return err
	})
	return out, err
}

// CompanyGardensVisibleTo returns the gardens of the company the user can read, by id:
// all of them with a company permission, else those with a garden permission.
func (s *Store) CompanyGardensVisibleTo(companyID, userID uint64) ([]Garden, error) {
	var out []Garden
	err := s.db.View(func(tx *bolt.Tx) error {
		if _, err := getCompany(tx, companyID); err != nil {
			return err
		}
		var ids []uint64
		if tx.Bucket(bucketPermCompany).Get(pairKey(companyID, userID)) != nil {
			ids = idsUnder(tx.Bucket(bucketCompanyGardens), itob(companyID))
		} else {
			ids = idsUnder(tx.Bucket(bucketUserGarden), pairKey(userID, companyID))
		}
		var err error
		out, err = getEach(tx, getGarden, ids)
		return err
	})
	return out, err
}

// DeleteGarden removes a garden of the company with its beds, image record,
// coordinates and permissions in one transaction. The caller deletes the files listed
// in Removed after it returns.
func (s *Store) DeleteGarden(companyID, gardenID uint64) (Removed, error) {
	return s.deleteInTx(func(tx *bolt.Tx, r *Removed) error {
		g, err := gardenOf(tx, companyID, gardenID)
		if err != nil {
			return err
		}
		return deleteGarden(tx, g, r)
	})
}

// deleteGarden removes g and everything that hangs off it, recording in r what lives
// outside the database.
func deleteGarden(tx *bolt.Tx, g Garden, r *Removed) error {
	for _, bedID := range idsUnder(tx.Bucket(bucketGardenBeds), itob(g.ID)) {
		b, err := getBed(tx, bedID)
		if err != nil {
			return err
		}
		if err := deleteBed(tx, b, r); err != nil {
			return err
		}
	}
	for _, userID := range idsUnder(tx.Bucket(bucketPermGarden), itob(g.ID)) {
		if err := deleteGardenPerm(tx, g, userID); err != nil {
			return err
		}
	}
	if err := tx.Bucket(bucketGardenCoords).Delete(itob(g.ID)); err != nil {
		return err
	}
	if err := tx.Bucket(bucketCompanyGardens).Delete(pairKey(g.Company, g.ID)); err != nil {
		return err
	}
	if g.ImagePath != nil {
		r.ImagePaths = append(r.ImagePaths, *g.ImagePath)
	}
	return tx.Bucket(bucketGardens).Delete(itob(g.ID))
}

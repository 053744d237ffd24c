package bolt

import (
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/gardend/gardend/store"
)

// CreateGarden stores a new garden of the company.
func (s *Store) CreateGarden(companyID uint64, name string) (store.Garden, error) {
	g := store.Garden{Name: name, Company: companyID}
	if err := g.Validate(); err != nil {
		return store.Garden{}, err
	}
	err := s.db.Update(func(tx *bbolt.Tx) error {
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
		if err := tx.Bucket(bucketCompanyGardens).Put(pairKey(companyID, id), nil); err != nil {
			return err
		}
		return recordChange(tx, s.now(), store.KindGarden, id, companyID, false)
	})
	if err != nil {
		return store.Garden{}, err
	}
	return g, nil
}

func getGarden(tx *bbolt.Tx, id uint64) (store.Garden, error) {
	return getRecord[store.Garden](tx, bucketGardens, "garden", id)
}

// gardenOf loads a garden addressed under a company: one of another company is
// ErrNotFound, as if it did not exist.
func gardenOf(tx *bbolt.Tx, companyID, gardenID uint64) (store.Garden, error) {
	g, err := getGarden(tx, gardenID)
	if err != nil {
		return store.Garden{}, err
	}
	if g.Company != companyID {
		return store.Garden{}, fmt.Errorf("garden %d of company %d: %w", gardenID, companyID, store.ErrNotFound)
	}
	return g, nil
}

// Garden returns the garden with id, of whichever company.
func (s *Store) Garden(id uint64) (store.Garden, error) {
	var g store.Garden
	err := s.db.View(func(tx *bbolt.Tx) (err error) {
		g, err = getGarden(tx, id)
		return err
	})
	return g, err
}

// Gardens returns every garden by id (a site admin's view).
func (s *Store) Gardens() ([]store.Garden, error) { return s.GardensPage(store.Page{}) }

// GardensVisibleTo returns every garden the user can read, each once, by id: all
// gardens of companies where the user holds a company permission, and the gardens
// with a garden permission of the user. The work follows the user's permissions, not
// the number of gardens stored.
func (s *Store) GardensVisibleTo(userID uint64) ([]store.Garden, error) {
	return s.GardensVisibleToPage(userID, store.Page{})
}

// GardensOfCompany returns every garden of the company by id.
func (s *Store) GardensOfCompany(companyID uint64) ([]store.Garden, error) {
	return s.GardensOfCompanyPage(companyID, store.Page{})
}

// CompanyGardensVisibleTo returns the gardens of the company the user can read, by id:
// all of them with a company permission, else those with a garden permission.
func (s *Store) CompanyGardensVisibleTo(companyID, userID uint64) ([]store.Garden, error) {
	return s.CompanyGardensVisibleToPage(companyID, userID, store.Page{})
}

// DeleteGarden removes a garden of the company with its beds, image record,
// coordinates and permissions in one transaction. The caller deletes the files listed
// in Removed after it returns.
func (s *Store) DeleteGarden(companyID, gardenID uint64) (store.Removed, error) {
	return s.deleteInTx(func(tx *bbolt.Tx, r *store.Removed) error {
		g, err := gardenOf(tx, companyID, gardenID)
		if err != nil {
			return err
		}
		if err := deleteGarden(tx, g, r); err != nil {
			return err
		}
		return recordChange(tx, s.now(), store.KindGarden, g.ID, g.Company, true)
	})
}

// deleteGarden removes g and everything that hangs off it, recording in r what lives
// outside the database.
func deleteGarden(tx *bbolt.Tx, g store.Garden, r *store.Removed) error {
	if err := deleteGardenLogs(tx, g.ID, r); err != nil {
		return err
	}
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
	if err := tx.Bucket(bucketGuidance).Delete(itob(g.ID)); err != nil {
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

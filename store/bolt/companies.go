package bolt

import (
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/gardend/gardend/store"
)

// CreateCompany stores a new company and makes creatorID its admin in the same
// transaction, so no company ever exists without an admin.
func (s *Store) CreateCompany(creatorID uint64, name string) (store.Company, error) {
	c := store.Company{Name: name}
	if err := c.Validate(); err != nil {
		return store.Company{}, err
	}
	err := s.db.Update(func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketUsers).Get(itob(creatorID)) == nil {
			return fmt.Errorf("user %d: %w", creatorID, store.ErrNotFound)
		}
		companies := tx.Bucket(bucketCompanies)
		id, err := companies.NextSequence()
		if err != nil {
			return err
		}
		c.ID = id
		if err := putJSON(companies, itob(id), c); err != nil {
			return err
		}
		if _, err = putCompanyPerm(tx, id, creatorID, store.LevelAdmin); err != nil {
			return err
		}
		if err := recordChange(tx, s.now(), store.KindCompany, id, 0, false); err != nil {
			return err
		}
		return recordChange(tx, s.now(), store.KindCompanyPermission, id, creatorID, false)
	})
	if err != nil {
		return store.Company{}, err
	}
	return c, nil
}

func getCompany(tx *bbolt.Tx, id uint64) (store.Company, error) {
	return getRecord[store.Company](tx, bucketCompanies, "company", id)
}

// Company returns the company with id.
func (s *Store) Company(id uint64) (store.Company, error) {
	var c store.Company
	err := s.db.View(func(tx *bbolt.Tx) (err error) {
		c, err = getCompany(tx, id)
		return err
	})
	return c, err
}

// Companies returns every company by id (a site admin's view).
func (s *Store) Companies() ([]store.Company, error) { return s.CompaniesPage(store.Page{}) }

// CompaniesOfUser returns the companies on which the user holds a company permission,
// by id. Garden permissions do not count (decisions.md: GET /companies).
func (s *Store) CompaniesOfUser(userID uint64) ([]store.Company, error) {
	return s.CompaniesOfUserPage(userID, store.Page{})
}

// DeleteCompany removes the company with its gardens, their beds, image records and
// coordinates, and every permission on any of them, in one transaction. The caller
// deletes the files listed in Removed after it returns.
func (s *Store) DeleteCompany(id uint64) (store.Removed, error) {
	return s.deleteInTx(func(tx *bbolt.Tx, r *store.Removed) error {
		if _, err := getCompany(tx, id); err != nil {
			return err
		}
		if err := deleteCompany(tx, id, r); err != nil {
			return err
		}
		return recordChange(tx, s.now(), store.KindCompany, id, 0, true)
	})
}

// deleteCompany removes the company and everything that hangs off it, recording in r
// what lives outside the database.
func deleteCompany(tx *bbolt.Tx, id uint64, r *store.Removed) error {
	for _, gardenID := range idsUnder(tx.Bucket(bucketCompanyGardens), itob(id)) {
		g, err := getGarden(tx, gardenID)
		if err != nil {
			return err
		}
		if err := deleteGarden(tx, g, r); err != nil {
			return err
		}
	}
	for _, userID := range idsUnder(tx.Bucket(bucketPermCompany), itob(id)) {
		if err := deleteCompanyPerm(tx, id, userID); err != nil {
			return err
		}
	}
	return tx.Bucket(bucketCompanies).Delete(itob(id))
}

package store

import (
	"fmt"
	"strings"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"
)

// Company owns gardens; its members hold company permissions.
type Company struct {
	ID   uint64 `json:"id"`
	Name string `json:"name"`
}

// maxNameLen bounds the names of companies, gardens and beds, in characters.
const maxNameLen = 128

// Validate checks the name: 1–128 characters, not blank.
func (c Company) Validate() error { return checkName(c.Name) }

func checkName(name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return Invalid("name", "name is required and must not be blank")
	case utf8.RuneCountInString(name) > maxNameLen:
		return Invalid("name", fmt.Sprintf("name must be at most %d characters", maxNameLen))
	}
	return nil
}

// CreateCompany stores a new company and makes creatorID its admin in the same
// transaction, so no company ever exists without an admin.
func (s *Store) CreateCompany(creatorID uint64, name string) (Company, error) {
	c := Company{Name: name}
	if err := c.Validate(); err != nil {
		return Company{}, err
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketUsers).Get(itob(creatorID)) == nil {
			return fmt.Errorf("user %d: %w", creatorID, ErrNotFound)
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
		_, err = putCompanyPerm(tx, id, creatorID, LevelAdmin)
		return err
	})
	if err != nil {
		return Company{}, err
	}
	return c, nil
}

func getCompany(tx *bolt.Tx, id uint64) (Company, error) {
	return getRecord[Company](tx, bucketCompanies, "company", id)
}

// Company returns the company with id.
func (s *Store) Company(id uint64) (Company, error) {
	var c Company
	err := s.db.View(func(tx *bolt.Tx) (err error) {
		c, err = getCompany(tx, id)
		return err
	})
	return c, err
}

// Companies returns every company by id (a site admin's view).
func (s *Store) Companies() ([]Company, error) {
	out := []Company{}
	err := s.db.View(func(tx *bolt.Tx) error {
		return eachUnder(tx, bucketCompanies, nil, func(c Company) { out = append(out, c) })
	})
	return out, err
}

// CompaniesOfUser returns the companies on which the user holds a company permission,
// by id. Garden permissions do not count (decisions.md: GET /companies).
func (s *Store) CompaniesOfUser(userID uint64) ([]Company, error) {
	var out []Company
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		out, err = getEach(tx, getCompany, idsUnder(tx.Bucket(bucketUserCompany), itob(userID)))
		return err
	})
	return out, err
}

// DeleteCompany removes the company with its gardens, their beds, image records and
// coordinates, and every permission on any of them, in one transaction. The caller
// deletes the files listed in Removed after it returns.
func (s *Store) DeleteCompany(id uint64) (Removed, error) {
	return s.deleteInTx(func(tx *bolt.Tx, r *Removed) error {
		if _, err := getCompany(tx, id); err != nil {
			return err
		}
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
	})
}

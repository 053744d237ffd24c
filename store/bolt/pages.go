package bolt

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	bbolt "go.etcd.io/bbolt"

	"github.com/gardend/gardend/store"
)

// The paged listings (store.ListPager). Each page is one read transaction; the
// whole-list methods are the page without a limit.

// idsUnderPage is idsUnder for the ids of p: the keys are prefix followed by an id.
func idsUnderPage(b *bbolt.Bucket, prefix []byte, p store.Page) []uint64 {
	if p.After == math.MaxUint64 {
		return nil
	}
	var ids []uint64
	c := b.Cursor()
	start := append(bytes.Clone(prefix), itob(p.After+1)...)
	for k, _ := c.Seek(start); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if p.Full(len(ids)) {
			break
		}
		ids = append(ids, btoi(k[len(k)-8:]))
	}
	return ids
}

// recordsPage decodes the records of bucket (keyed by id) of p.
func recordsPage[T any](tx *bbolt.Tx, bucket []byte, p store.Page) ([]T, error) {
	out := []T{}
	if p.After == math.MaxUint64 {
		return out, nil
	}
	c := tx.Bucket(bucket).Cursor()
	for k, v := c.Seek(itob(p.After + 1)); k != nil && !p.Full(len(out)); k, v = c.Next() {
		var t T
		if err := json.Unmarshal(v, &t); err != nil {
			return nil, fmt.Errorf("decode %s %q: %w", bucket, k, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// CompaniesPage is a page of every company (a site admin's view).
func (s *Store) CompaniesPage(p store.Page) ([]store.Company, error) {
	var out []store.Company
	err := s.db.View(func(tx *bbolt.Tx) (err error) {
		out, err = recordsPage[store.Company](tx, bucketCompanies, p)
		return err
	})
	return out, err
}

// CompaniesOfUserPage is a page of CompaniesOfUser.
func (s *Store) CompaniesOfUserPage(userID uint64, p store.Page) ([]store.Company, error) {
	var out []store.Company
	err := s.db.View(func(tx *bbolt.Tx) (err error) {
		out, err = getEach[store.Company](tx, bucketCompanies, "company", idsUnderPage(tx.Bucket(bucketUserCompany), itob(userID), p))
		return err
	})
	return out, err
}

// GardensPage is a page of every garden (a site admin's view).
func (s *Store) GardensPage(p store.Page) ([]store.Garden, error) {
	var out []store.Garden
	err := s.db.View(func(tx *bbolt.Tx) (err error) {
		out, err = recordsPage[store.Garden](tx, bucketGardens, p)
		return err
	})
	return out, err
}

// GardensVisibleToPage is a page of GardensVisibleTo: each source of gardens (each
// member company, then the garden permissions) gives at most a page after p.After,
// and the lowest ids of them all make the page.
func (s *Store) GardensVisibleToPage(userID uint64, p store.Page) ([]store.Garden, error) {
	var out []store.Garden
	err := s.db.View(func(tx *bbolt.Tx) error {
		member := map[uint64]bool{}
		var ids []uint64
		companyGardens := tx.Bucket(bucketCompanyGardens) // opened once (getEach says why)
		for _, companyID := range idsUnder(tx.Bucket(bucketUserCompany), itob(userID)) {
			member[companyID] = true
			ids = append(ids, idsUnderPage(companyGardens, itob(companyID), p)...)
		}
		c := tx.Bucket(bucketUserGarden).Cursor()
		prefix := itob(userID)
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			// A garden of a member company is listed already.
			if id := btoi(k[16:]); id > p.After && !member[btoi(k[8:])] {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		if p.Full(len(ids)) {
			ids = ids[:p.Limit]
		}
		var err error
		out, err = getEach[store.Garden](tx, bucketGardens, "garden", ids)
		return err
	})
	return out, err
}

// GardensOfCompanyPage is a page of GardensOfCompany.
func (s *Store) GardensOfCompanyPage(companyID uint64, p store.Page) ([]store.Garden, error) {
	var out []store.Garden
	err := s.db.View(func(tx *bbolt.Tx) error {
		if _, err := getCompany(tx, companyID); err != nil {
			return err
		}
		var err error
		out, err = getEach[store.Garden](tx, bucketGardens, "garden", idsUnderPage(tx.Bucket(bucketCompanyGardens), itob(companyID), p))
		return err
	})
	return out, err
}

// CompanyGardensVisibleToPage is a page of CompanyGardensVisibleTo.
func (s *Store) CompanyGardensVisibleToPage(companyID, userID uint64, p store.Page) ([]store.Garden, error) {
	var out []store.Garden
	err := s.db.View(func(tx *bbolt.Tx) error {
		if _, err := getCompany(tx, companyID); err != nil {
			return err
		}
		var ids []uint64
		if tx.Bucket(bucketPermCompany).Get(pairKey(companyID, userID)) != nil {
			ids = idsUnderPage(tx.Bucket(bucketCompanyGardens), itob(companyID), p)
		} else {
			ids = idsUnderPage(tx.Bucket(bucketUserGarden), pairKey(userID, companyID), p)
		}
		var err error
		out, err = getEach[store.Garden](tx, bucketGardens, "garden", ids)
		return err
	})
	return out, err
}

// CompanyPermissionsPage is a page of CompanyPermissions.
func (s *Store) CompanyPermissionsPage(companyID uint64, p store.Page) ([]store.Permission, error) {
	var out []store.Permission
	err := s.db.View(func(tx *bbolt.Tx) error {
		if _, err := getCompany(tx, companyID); err != nil {
			return err
		}
		var err error
		out, err = membersPage(tx, tx.Bucket(bucketPermCompany), companyID, p)
		return err
	})
	return out, err
}

// GardenPermissionsPage is a page of GardenPermissions.
func (s *Store) GardenPermissionsPage(gardenID uint64, p store.Page) ([]store.Permission, error) {
	var out []store.Permission
	err := s.db.View(func(tx *bbolt.Tx) error {
		if _, err := getGarden(tx, gardenID); err != nil {
			return err
		}
		var err error
		out, err = membersPage(tx, tx.Bucket(bucketPermGarden), gardenID, p)
		return err
	})
	return out, err
}

// membersPage lists the permissions on owner (a company or garden id) stored in b of
// p, by permission id, with current usernames. The permissions are keyed by user: the
// ids of all of them are read (16 bytes each), the users of the page only.
func membersPage(tx *bbolt.Tx, b *bbolt.Bucket, owner uint64, p store.Page) ([]store.Permission, error) {
	type member struct{ id, userID uint64 }
	var all []member
	for _, userID := range idsUnder(b, itob(owner)) {
		v, _, err := getPerm(b, pairKey(owner, userID))
		if err != nil {
			return nil, err
		}
		if v.id > p.After {
			all = append(all, member{v.id, userID})
		}
	}
	slices.SortFunc(all, func(a, b member) int { return cmp.Compare(a.id, b.id) })
	if p.Full(len(all)) {
		all = all[:p.Limit]
	}
	out := make([]store.Permission, 0, len(all))
	for _, m := range all {
		v, _, err := getPerm(b, pairKey(owner, m.userID))
		if err != nil {
			return nil, err
		}
		u, err := getUser(tx, m.userID)
		if err != nil {
			return nil, err
		}
		out = append(out, store.Permission{ID: v.id, UserID: m.userID, Username: u.Username, Level: v.level})
	}
	return out, nil
}

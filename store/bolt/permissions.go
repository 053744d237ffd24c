package bolt

import (
	"bytes"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/gardend/gardend/store"
)

// permValue is the stored form: the id (8 bytes big-endian) and the letter, so role
// checks on every request decode without allocating much.
type permValue struct {
	id    uint64
	level store.Level
}

const permValueSize = 9

func (p permValue) encode() []byte {
	b := make([]byte, permValueSize)
	copy(b, itob(p.id))
	b[8] = p.level[0]
	return b
}

// getPerm reads the permission at key; found is false when there is none.
func getPerm(b *bbolt.Bucket, key []byte) (p permValue, found bool, err error) {
	v := b.Get(key)
	if v == nil {
		return permValue{}, false, nil
	}
	if len(v) != permValueSize || store.Level(v[8:]).Validate() != nil {
		return permValue{}, false, fmt.Errorf("permission record %x: corrupt", key)
	}
	return permValue{id: btoi(v), level: store.Level(v[8:])}, true, nil
}

// levelAt is the letter at key, "" when there is none.
func levelAt(b *bbolt.Bucket, key []byte) (store.Level, error) {
	p, _, err := getPerm(b, key)
	return p.level, err
}

// putPerm writes level at key, keeping the id of a permission it overwrites.
func putPerm(b *bbolt.Bucket, key []byte, level store.Level) (uint64, error) {
	p, found, err := getPerm(b, key)
	if err != nil {
		return 0, err
	}
	if !found {
		if p.id, err = b.NextSequence(); err != nil {
			return 0, err
		}
	}
	p.level = level
	return p.id, b.Put(key, p.encode())
}

func putCompanyPerm(tx *bbolt.Tx, companyID, userID uint64, level store.Level) (uint64, error) {
	id, err := putPerm(tx.Bucket(bucketPermCompany), pairKey(companyID, userID), level)
	if err != nil {
		return 0, err
	}
	return id, tx.Bucket(bucketUserCompany).Put(pairKey(userID, companyID), nil)
}

func deleteCompanyPerm(tx *bbolt.Tx, companyID, userID uint64) error {
	if err := tx.Bucket(bucketPermCompany).Delete(pairKey(companyID, userID)); err != nil {
		return err
	}
	return tx.Bucket(bucketUserCompany).Delete(pairKey(userID, companyID))
}

func putGardenPerm(tx *bbolt.Tx, g store.Garden, userID uint64, level store.Level) (uint64, error) {
	id, err := putPerm(tx.Bucket(bucketPermGarden), pairKey(g.ID, userID), level)
	if err != nil {
		return 0, err
	}
	return id, tx.Bucket(bucketUserGarden).Put(tripleKey(userID, g.Company, g.ID), nil)
}

func deleteGardenPerm(tx *bbolt.Tx, g store.Garden, userID uint64) error {
	if err := tx.Bucket(bucketPermGarden).Delete(pairKey(g.ID, userID)); err != nil {
		return err
	}
	return tx.Bucket(bucketUserGarden).Delete(tripleKey(userID, g.Company, g.ID))
}

// permTarget resolves the user a permission change is about, as login does
// (userIDByName), and returns their id and stored name. Nobody may change their own
// permission (it prevents lock-out); actorID 0 is an operator acting for nobody.
func permTarget(tx *bbolt.Tx, actorID uint64, username string) (uint64, string, error) {
	id, ok := userIDByName(tx, username)
	switch {
	case ok && id == actorID:
		return 0, "", store.OwnPermission()
	case !ok:
		return 0, "", store.UnknownPermissionUser(username)
	}
	rec, err := getRecord[userRecord](tx, bucketUsers, "user", id)
	return id, rec.Username, err
}

// keepsAnAdmin refuses to take the admin letter from userID when they are the company's
// last admin. Site admins do not count: they are not members of the company.
func keepsAnAdmin(tx *bbolt.Tx, companyID, userID uint64, username string) error {
	cur, err := levelAt(tx.Bucket(bucketPermCompany), pairKey(companyID, userID))
	if err != nil || cur != store.LevelAdmin {
		return err
	}
	admins := 0
	c := tx.Bucket(bucketPermCompany).Cursor()
	prefix := itob(companyID)
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && admins < 2; k, v = c.Next() {
		if len(v) == permValueSize && store.Level(v[8:]) == store.LevelAdmin {
			admins++
		}
	}
	if admins < 2 {
		return store.LastAdmin(username, companyID)
	}
	return nil
}

// SetCompanyPermission gives the user named username the level on the company,
// overwriting (and keeping the id of) a permission they hold. actorID is the user
// making the change: changing one's own permission is ErrForbidden, as is demoting the
// company's last admin; an unknown username is invalid input.
func (s *Store) SetCompanyPermission(companyID, actorID uint64, username string, level store.Level) (store.CompanyPermission, error) {
	if err := store.ValidatePermissionRequest(username, &level); err != nil {
		return store.CompanyPermission{}, err
	}
	p := store.CompanyPermission{Permission: store.Permission{Username: username, Level: level}, Company: companyID}
	err := s.db.Update(func(tx *bbolt.Tx) error {
		if _, err := getCompany(tx, companyID); err != nil {
			return err
		}
		userID, name, err := permTarget(tx, actorID, username)
		if err != nil {
			return err
		}
		p.Username = name
		if level != store.LevelAdmin {
			if err := keepsAnAdmin(tx, companyID, userID, name); err != nil {
				return err
			}
		}
		p.UserID = userID
		if p.ID, err = putCompanyPerm(tx, companyID, userID, level); err != nil {
			return err
		}
		return recordChange(tx, s.now(), store.KindCompanyPermission, companyID, userID, false)
	})
	if err != nil {
		return store.CompanyPermission{}, err
	}
	return p, nil
}

// RemoveCompanyPermission deletes the user's permission on the company and reports
// whether there was one. The rules of SetCompanyPermission apply.
func (s *Store) RemoveCompanyPermission(companyID, actorID uint64, username string) (removed bool, err error) {
	if err := store.ValidatePermissionRequest(username, nil); err != nil {
		return false, err
	}
	err = s.db.Update(func(tx *bbolt.Tx) error {
		if _, err := getCompany(tx, companyID); err != nil {
			return err
		}
		userID, name, err := permTarget(tx, actorID, username)
		if err != nil {
			return err
		}
		if tx.Bucket(bucketPermCompany).Get(pairKey(companyID, userID)) == nil {
			return nil
		}
		if err := keepsAnAdmin(tx, companyID, userID, name); err != nil {
			return err
		}
		removed = true
		if err := deleteCompanyPerm(tx, companyID, userID); err != nil {
			return err
		}
		return recordChange(tx, s.now(), store.KindCompanyPermission, companyID, userID, true)
	})
	return removed, err
}

// SetGardenPermission gives the user named username the level on the garden, with the
// rules of SetCompanyPermission except the last-admin one: the company's admins can
// always administer its gardens, and a company always has an admin.
func (s *Store) SetGardenPermission(gardenID, actorID uint64, username string, level store.Level) (store.GardenPermission, error) {
	if err := store.ValidatePermissionRequest(username, &level); err != nil {
		return store.GardenPermission{}, err
	}
	p := store.GardenPermission{Permission: store.Permission{Username: username, Level: level}, Garden: gardenID}
	err := s.db.Update(func(tx *bbolt.Tx) error {
		g, err := getGarden(tx, gardenID)
		if err != nil {
			return err
		}
		if p.UserID, p.Username, err = permTarget(tx, actorID, username); err != nil {
			return err
		}
		if p.ID, err = putGardenPerm(tx, g, p.UserID, level); err != nil {
			return err
		}
		return recordChange(tx, s.now(), store.KindGardenPermission, g.ID, p.UserID, false)
	})
	if err != nil {
		return store.GardenPermission{}, err
	}
	return p, nil
}

// RemoveGardenPermission deletes the user's permission on the garden and reports
// whether there was one.
func (s *Store) RemoveGardenPermission(gardenID, actorID uint64, username string) (removed bool, err error) {
	if err := store.ValidatePermissionRequest(username, nil); err != nil {
		return false, err
	}
	err = s.db.Update(func(tx *bbolt.Tx) error {
		g, err := getGarden(tx, gardenID)
		if err != nil {
			return err
		}
		userID, _, err := permTarget(tx, actorID, username)
		if err != nil {
			return err
		}
		if tx.Bucket(bucketPermGarden).Get(pairKey(gardenID, userID)) == nil {
			return nil
		}
		removed = true
		if err := deleteGardenPerm(tx, g, userID); err != nil {
			return err
		}
		return recordChange(tx, s.now(), store.KindGardenPermission, g.ID, userID, true)
	})
	return removed, err
}

// CompanyPermissions lists the company's permissions by id.
func (s *Store) CompanyPermissions(companyID uint64) ([]store.Permission, error) {
	return s.CompanyPermissionsPage(companyID, store.Page{})
}

// GardenPermissions lists the garden's permissions by id.
func (s *Store) GardenPermissions(gardenID uint64) ([]store.Permission, error) {
	return s.GardenPermissionsPage(gardenID, store.Page{})
}

// ListPermissions returns every permission of both kinds, by company or garden and then
// by user id.
func (s *Store) ListPermissions() (store.PermissionList, error) {
	list := store.PermissionList{Company: []store.CompanyPermission{}, Garden: []store.GardenPermission{}}
	err := s.db.View(func(tx *bbolt.Tx) error {
		each := func(bucket []byte, add func(on uint64, p store.Permission)) error {
			b := tx.Bucket(bucket)
			return b.ForEach(func(k, _ []byte) error {
				p, _, err := getPerm(b, k)
				if err != nil {
					return err
				}
				userID := btoi(k[8:])
				u, err := getUser(tx, userID)
				if err != nil {
					return err
				}
				add(btoi(k), store.Permission{ID: p.id, UserID: userID, Username: u.Username, Level: p.level})
				return nil
			})
		}
		if err := each(bucketPermCompany, func(on uint64, p store.Permission) {
			list.Company = append(list.Company, store.CompanyPermission{Permission: p, Company: on})
		}); err != nil {
			return err
		}
		return each(bucketPermGarden, func(on uint64, p store.Permission) {
			list.Garden = append(list.Garden, store.GardenPermission{Permission: p, Garden: on})
		})
	})
	return list, err
}

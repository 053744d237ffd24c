package store

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// Level is a permission letter (seed: Permission): "u" may read, "a" administers.
type Level string

// The two permission letters.
const (
	LevelUser  Level = "u"
	LevelAdmin Level = "a"
)

// Validate accepts exactly "u" and "a".
func (l Level) Validate() error {
	if msg := l.problem(); msg != "" {
		return Invalid("permission", msg)
	}
	return nil
}

func (l Level) problem() string {
	switch l {
	case LevelUser, LevelAdmin:
		return ""
	case "":
		return "permission is required: 'u' or 'a'"
	}
	return "permission must be 'u' or 'a'"
}

// Permission is one user's permission on a company or a garden. The username is
// looked up when read, so a renamed user shows the new name.
type Permission struct {
	ID       uint64 `json:"id"`
	UserID   uint64 `json:"-"`
	Username string `json:"username"`
	Level    Level  `json:"permission"`
}

// CompanyPermission is a permission on a company.
type CompanyPermission struct {
	Permission
	Company uint64 `json:"company"`
}

// GardenPermission is a permission on a garden.
type GardenPermission struct {
	Permission
	Garden uint64 `json:"garden"`
}

// PermissionList is every stored permission, for inspection.
type PermissionList struct {
	Company []CompanyPermission `json:"company"`
	Garden  []GardenPermission  `json:"garden"`
}

// permValue is the stored form: the id (8 bytes big-endian) and the letter, so role
// checks on every request decode without allocating much.
type permValue struct {
	id    uint64
	level Level
}

const permValueSize = 9

func (p permValue) encode() []byte {
	b := make([]byte, permValueSize)
	copy(b, itob(p.id))
	b[8] = p.level[0]
	return b
}

// getPerm reads the permission at key; found is false when there is none.
func getPerm(b *bolt.Bucket, key []byte) (p permValue, found bool, err error) {
	v := b.Get(key)
	if v == nil {
		return permValue{}, false, nil
	}
	if len(v) != permValueSize || Level(v[8:]).Validate() != nil {
		return permValue{}, false, fmt.Errorf("permission record %x: corrupt", key)
	}
	return permValue{id: btoi(v), level: Level(v[8:])}, true, nil
}

// levelAt is the letter at key, "" when there is none.
func levelAt(b *bolt.Bucket, key []byte) (Level, error) {
	p, _, err := getPerm(b, key)
	return p.level, err
}

// putPerm writes level at key, keeping the id of a permission it overwrites.
func putPerm(b *bolt.Bucket, key []byte, level Level) (uint64, error) {
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

func putCompanyPerm(tx *bolt.Tx, companyID, userID uint64, level Level) (uint64, error) {
	id, err := putPerm(tx.Bucket(bucketPermCompany), pairKey(companyID, userID), level)
	if err != nil {
		return 0, err
	}
	return id, tx.Bucket(bucketUserCompany).Put(pairKey(userID, companyID), nil)
}

func deleteCompanyPerm(tx *bolt.Tx, companyID, userID uint64) error {
	if err := tx.Bucket(bucketPermCompany).Delete(pairKey(companyID, userID)); err != nil {
		return err
	}
	return tx.Bucket(bucketUserCompany).Delete(pairKey(userID, companyID))
}

func putGardenPerm(tx *bolt.Tx, g Garden, userID uint64, level Level) (uint64, error) {
	id, err := putPerm(tx.Bucket(bucketPermGarden), pairKey(g.ID, userID), level)
	if err != nil {
		return 0, err
	}
	return id, tx.Bucket(bucketUserGarden).Put(tripleKey(userID, g.Company, g.ID), nil)
}

func deleteGardenPerm(tx *bolt.Tx, g Garden, userID uint64) error {
	if err := tx.Bucket(bucketPermGarden).Delete(pairKey(g.ID, userID)); err != nil {
		return err
	}
	return tx.Bucket(bucketUserGarden).Delete(tripleKey(userID, g.Company, g.ID))
}

// checkPermRequest validates the body of a permission change; level is nil for a
// removal.
func checkPermRequest(username string, level *Level) error {
	v := &ValidationError{}
	if msg := ValidateUsername(username); msg != "" {
		v.Add("username", msg)
	}
	if level != nil {
		if msg := level.problem(); msg != "" {
			v.Add("permission", msg)
		}
	}
	return v.OrNil()
}

// permTarget resolves the user a permission change is about. Nobody may change their
// own permission (it prevents lock-out); actorID 0 is an operator acting for nobody.
func permTarget(tx *bolt.Tx, actorID uint64, username string) (uint64, error) {
	id, ok := userIDByName(tx, username)
	switch {
	case ok && id == actorID:
		return 0, fmt.Errorf("%w: you cannot change or remove your own permission; ask another admin", ErrForbidden)
	case !ok:
		return 0, Invalid("username", fmt.Sprintf("unknown user %q", username))
	}
	return id, nil
}

// keepsAnAdmin refuses to take the admin letter from userID when they are the company's
// last admin. Site admins do not count: they are not members of the company.
func keepsAnAdmin(tx *bolt.Tx, companyID, userID uint64, username string) error {
	cur, err := levelAt(tx.Bucket(bucketPermCompany), pairKey(companyID, userID))
	if err != nil || cur != LevelAdmin {
		return err
	}
	admins := 0
	c := tx.Bucket(bucketPermCompany).Cursor()
	prefix := itob(companyID)
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && admins < 2; k, v = c.Next() {
		if len(v) == permValueSize && Level(v[8:]) == LevelAdmin {
			admins++
		}
	}
	if admins < 2 {
		return fmt.Errorf("%w: %q is the last admin of company %d; make another user admin first", ErrForbidden, username, companyID)
	}
	return nil
}

// SetCompanyPermission gives the user named username the level on the company,
// overwriting (and keeping the id of) a permission they hold. actorID is the user
// making the change: changing one's own permission is ErrForbidden, as is demoting the
// company's last admin; an unknown username is invalid input.
func (s *Store) SetCompanyPermission(companyID, actorID uint64, username string, level Level) (CompanyPermission, error) {
	if err := checkPermRequest(username, &level); err != nil {
		return CompanyPermission{}, err
	}
	p := CompanyPermission{Permission: Permission{Username: username, Level: level}, Company: companyID}
	err := s.db.Update(func(tx *bolt.Tx) error {
		if _, err := getCompany(tx, companyID); err != nil {
			return err
		}
		userID, err := permTarget(tx, actorID, username)
		if err != nil {
			return err
		}
		if level != LevelAdmin {
			if err := keepsAnAdmin(tx, companyID, userID, username); err != nil {
				return err
			}
		}
		p.UserID = userID
		p.ID, err = putCompanyPerm(tx, companyID, userID, level)
		return err
	})
	if err != nil {
		return CompanyPermission{}, err
	}
	return p, nil
}

// RemoveCompanyPermission deletes the user's permission on the company and reports
// whether there was one. The rules of SetCompanyPermission apply.
func (s *Store) RemoveCompanyPermission(companyID, actorID uint64, username string) (removed bool, err error) {
	if err := checkPermRequest(username, nil); err != nil {
		return false, err
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		if _, err := getCompany(tx, companyID); err != nil {
			return err
		}
		userID, err := permTarget(tx, actorID, username)
		if err != nil {
			return err
		}
		if tx.Bucket(bucketPermCompany).Get(pairKey(companyID, userID)) == nil {
			return nil
		}
		if err := keepsAnAdmin(tx, companyID, userID, username); err != nil {
			return err
		}
		removed = true
		return deleteCompanyPerm(tx, companyID, userID)
	})
	return removed, err
}

// SetGardenPermission gives the user named username the level on the garden, with the
// rules of SetCompanyPermission except the last-admin one: the company's admins can
// always administer its gardens, and a company always has an admin.
func (s *Store) SetGardenPermission(gardenID, actorID uint64, username string, level Level) (GardenPermission, error) {
	if err := checkPermRequest(username, &level); err != nil {
		return GardenPermission{}, err
	}
	p := GardenPermission{Permission: Permission{Username: username, Level: level}, Garden: gardenID}
	err := s.db.Update(func(tx *bolt.Tx) error {
		g, err := getGarden(tx, gardenID)
		if err != nil {
			return err
		}
		if p.UserID, err = permTarget(tx, actorID, username); err != nil {
			return err
		}
		p.ID, err = putGardenPerm(tx, g, p.UserID, level)
		return err
	})
	if err != nil {
		return GardenPermission{}, err
	}
	return p, nil
}

// RemoveGardenPermission deletes the user's permission on the garden and reports
// whether there was one.
func (s *Store) RemoveGardenPermission(gardenID, actorID uint64, username string) (removed bool, err error) {
	if err := checkPermRequest(username, nil); err != nil {
		return false, err
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		g, err := getGarden(tx, gardenID)
		if err != nil {
			return err
		}
		userID, err := permTarget(tx, actorID, username)
		if err != nil {
			return err
		}
		if tx.Bucket(bucketPermGarden).Get(pairKey(gardenID, userID)) == nil {
			return nil
		}
		removed = true
		return deleteGardenPerm(tx, g, userID)
	})
	return removed, err
}

// members lists the permissions on owner (a company or garden id) stored in b, by
// permission id, with current usernames.
func members(tx *bolt.Tx, b *bolt.Bucket, owner uint64) ([]Permission, error) {
	out := []Permission{}
	for _, userID := range idsUnder(b, itob(owner)) {
		p, _, err := getPerm(b, pairKey(owner, userID))
		if err != nil {
			return nil, err
		}
		u, err := getUser(tx, userID)
		if err != nil {
			return nil, err
		}
		out = append(out, Permission{ID: p.id, UserID: userID, Username: u.Username, Level: p.level})
	}
	slices.SortFunc(out, func(a, b Permission) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// CompanyPermissions lists the company's permissions by id.
func (s *Store) CompanyPermissions(companyID uint64) ([]Permission, error) {
	var out []Permission
	err := s.db.View(func(tx *bolt.Tx) error {
		if _, err := getCompany(tx, companyID); err != nil {
			return err
		}
		var err error
		out, err = members(tx, tx.Bucket(bucketPermCompany), companyID)
		return err
	})
	return out, err
}

// GardenPermissions lists the garden's permissions by id.
func (s *Store) GardenPermissions(gardenID uint64) ([]Permission, error) {
	var out []Permission
	err := s.db.View(func(tx *bolt.Tx) error {
		if _, err := getGarden(tx, gardenID); err != nil {
			return err
		}
		var err error
		out, err = members(tx, tx.Bucket(bucketPermGarden), gardenID)
		return err
	})
	return out, err
}

// ListPermissions returns every permission of both kinds, by company or garden and then
// by user id.
func (s *Store) ListPermissions() (PermissionList, error) {
	list := PermissionList{Company: []CompanyPermission{}, Garden: []GardenPermission{}}
	err := s.db.View(func(tx *bolt.Tx) error {
		each := func(bucket []byte, add func(on uint64, p Permission)) error {
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
				add(btoi(k), Permission{ID: p.id, UserID: userID, Username: u.Username, Level: p.level})
				return nil
			})
		}
		if err := each(bucketPermCompany, func(on uint64, p Permission) {
			list.Company = append(list.Company, CompanyPermission{Permission: p, Company: on})
		}); err != nil {
			return err
		}
		return each(bucketPermGarden, func(on uint64, p Permission) {
			list.Garden = append(list.Garden, GardenPermission{Permission: p, Garden: on})
		})
	})
	return list, err
}

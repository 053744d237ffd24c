package bolt

import (
	"bytes"
	"errors"

	bbolt "go.etcd.io/bbolt"

	"github.com/gardend/gardend/store"
)

// PlanImport works out what ApplyImport would do (store.PlanImport), without
// writing.
func (s *Store) PlanImport(in store.Import) (store.ImportPlan, error) {
	var plan store.ImportPlan
	err := s.db.View(func(tx *bbolt.Tx) (err error) {
		plan, err = store.PlanImport(importView{tx}, in)
		return err
	})
	return plan, err
}

// ApplyImport writes the new records of in, in one transaction (store.PrepareImport
// says what it refuses).
func (s *Store) ApplyImport(in store.Import, expect store.ImportPlan, images map[uint64]string) (store.ImportPlan, error) {
	var plan store.ImportPlan
	defer s.users.invalidate(0)
	err := s.db.Update(func(tx *bbolt.Tx) error {
		var (
			recs *store.ImportRecords
			err  error
		)
		plan, recs, err = store.PrepareImport(importView{tx}, in, expect, images, s.now().UTC())
		if err != nil {
			return err // ErrNothingToImport rolls back: not even a commit is written
		}
		l := newLoader(tx)
		if err := recs.Each(l.load); err != nil {
			return err
		}
		if err := l.finish(); err != nil {
			return err
		}
		now := s.now()
		for _, c := range recs.Changes() {
			if err := recordChange(tx, now, c.Kind, c.ID, c.Ref, false); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, store.ErrNothingToImport) {
		err = nil
	}
	return plan, err
}

// mapKey is the kind's short name in import map keys.
func mapKey(k store.ImportKind) string {
	switch k {
	case store.ImportCompanyPerms:
		return "company_perm"
	case store.ImportGardenPerms:
		return "garden_perm"
	}
	return string(k)
}

// importMapKey is source|0|kind|0|sourceKey.
func importMapKey(source string, kind store.ImportKind, key uint64) []byte {
	k := make([]byte, 0, len(source)+len(mapKey(kind))+2+8)
	k = append(k, source...)
	k = append(k, 0)
	k = append(k, mapKey(kind)...)
	k = append(k, 0)
	return append(k, itob(key)...)
}

// importedBy returns the ids imports gave records of kind: of source, or of any
// source when source is "".
func importedBy(tx *bbolt.Tx, source string, kind store.ImportKind) map[uint64]bool {
	out := map[uint64]bool{}
	m := tx.Bucket(bucketImportMap)
	if m == nil { // a database no gardend with imports has opened for writing
		return out
	}
	mid := append(append([]byte{0}, mapKey(kind)...), 0)
	prefix := []byte(source)
	if source != "" {
		prefix = append(prefix, mid...)
	}
	c := m.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if len(k) >= len(mid)+8 && bytes.Equal(k[len(k)-8-len(mid):len(k)-8], mid) && len(v) == 8 {
			out[btoi(v)] = true
		}
	}
	return out
}

// importView is store.ImportView on a transaction.
type importView struct{ tx *bbolt.Tx }

func (v importView) Imported(source string, kind store.ImportKind, key uint64) (uint64, bool, error) {
	m := v.tx.Bucket(bucketImportMap) // nil in a database opened read-only before any import
	if m == nil {
		return 0, false, nil
	}
	val := m.Get(importMapKey(source, kind, key))
	if len(val) != 8 {
		return 0, false, nil
	}
	return btoi(val), true, nil
}

func (v importView) ImportedIDs(source string, kind store.ImportKind) (map[uint64]bool, error) {
	return importedBy(v.tx, source, kind), nil
}

// kindBuckets are the buckets of each kind's records.
var kindBuckets = map[store.ImportKind][]byte{
	store.ImportUsers: bucketUsers, store.ImportCompanies: bucketCompanies, store.ImportGardens: bucketGardens,
	store.ImportBeds: bucketBeds, store.ImportCompanyPerms: bucketPermCompany, store.ImportGardenPerms: bucketPermGarden,
}

func (v importView) IDs(kind store.ImportKind) (map[uint64]bool, error) {
	name, ok := kindBuckets[kind]
	if !ok {
		return nil, nil
	}
	out := map[uint64]bool{}
	if kind == store.ImportCompanyPerms || kind == store.ImportGardenPerms {
		// Permissions are keyed by what they are on and whom; the id is in the value.
		return out, v.tx.Bucket(name).ForEach(func(_, val []byte) error {
			if len(val) == permValueSize {
				out[btoi(val)] = true
			}
			return nil
		})
	}
	return out, v.tx.Bucket(name).ForEach(func(k, _ []byte) error {
		if len(k) == 8 {
			out[btoi(k)] = true
		}
		return nil
	})
}

func (v importView) LastID(kind store.ImportKind) (uint64, error) {
	if name, ok := kindBuckets[kind]; ok {
		return v.tx.Bucket(name).Sequence(), nil
	}
	return 0, nil
}

func (v importView) Usernames() ([]string, error) {
	var out []string
	return out, v.tx.Bucket(bucketUsernames).ForEach(func(k, _ []byte) error {
		out = append(out, string(k))
		return nil
	})
}

func (v importView) HasBed(gardenID uint64, uuid string) (bool, error) {
	return v.tx.Bucket(bucketBedUUIDs).Get(bedUUIDKey(uuid, gardenID)) != nil, nil
}

func (v importView) HasPermission(kind store.ImportKind, on, userID uint64) (bool, error) {
	return v.tx.Bucket(kindBuckets[kind]).Get(pairKey(on, userID)) != nil, nil
}

func (v importView) HasWidgets(userID uint64) (bool, error) {
	return v.tx.Bucket(bucketWidgets).Get(itob(userID)) != nil, nil
}

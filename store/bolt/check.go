package bolt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/gardend/gardend/store"
)

// CheckIndexes verifies the relations bbolt cannot: every index entry has its record
// and every record its index entries, permission ids are unique per kind, and every
// company has an admin. It returns every problem found, joined; tests run it at
// cleanup.
func (s *Store) CheckIndexes() error {
	return s.db.View(func(tx *bbolt.Tx) error {
		c := &indexCheck{tx: tx}
		c.users()
		c.gardens()
		c.permissions()
		c.beds()
		c.clouds()
		c.logs()
		c.history()
		return errors.Join(c.errs...)
	})
}

type indexCheck struct {
	tx      *bbolt.Tx
	errs    []error
	gardenM map[uint64]store.Garden
	bedM    map[uint64]store.Bed
}

func (c *indexCheck) bad(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf(format, args...))
}

func (c *indexCheck) has(bucket, key []byte) bool { return c.tx.Bucket(bucket).Get(key) != nil }

// each runs fn on every entry of bucket; fn records problems with bad.
func (c *indexCheck) each(bucket []byte, fn func(k, v []byte)) {
	_ = c.tx.Bucket(bucket).ForEach(func(k, v []byte) error { // fn never fails
		fn(k, v)
		return nil
	})
}

// users checks that every account has its username and look entries and no entry
// is left without its account.
func (c *indexCheck) users() {
	names, wantLooks := 0, 0
	c.each(bucketUsernames, func(k, v []byte) {
		names++
		if len(v) != 8 {
			c.bad("username %q: id of %d bytes", k, len(v))
			return
		}
		rec, err := getRecord[userRecord](c.tx, bucketUsers, "user", btoi(v))
		if err != nil || rec.Username != string(k) {
			c.bad("username %q: user %d is %q (%v)", k, btoi(v), rec.Username, err)
		}
		for _, key := range lookKeys(string(k), btoi(v)) {
			if !c.has(bucketUsernameLooks, key) {
				c.bad("username %q: not in the look index", k)
			}
			wantLooks++
		}
	})
	users := 0
	c.each(bucketUsers, func(k, _ []byte) { users++ })
	looks := 0
	c.each(bucketUsernameLooks, func(k, _ []byte) { looks++ })
	if users != names || looks != wantLooks {
		c.bad("%d users, %d usernames, %d look entries (want %d)", users, names, looks, wantLooks)
	}
}

func (c *indexCheck) gardens() {
	c.gardenM = map[uint64]store.Garden{}
	c.each(bucketCompanies, func(k, v []byte) {
		var co store.Company
		if err := json.Unmarshal(v, &co); err != nil || co.ID != btoi(k) {
			c.bad("company %d: undecodable or wrong id (%v)", btoi(k), err)
		}
	})
	c.each(bucketGardens, func(k, v []byte) {
		var g store.Garden
		if err := json.Unmarshal(v, &g); err != nil || g.ID != btoi(k) {
			c.bad("garden %d: undecodable or wrong id (%v)", btoi(k), err)
			return
		}
		c.gardenM[g.ID] = g
		if !c.has(bucketCompanies, itob(g.Company)) {
			c.bad("garden %d: company %d does not exist", g.ID, g.Company)
		}
		if !c.has(bucketCompanyGardens, pairKey(g.Company, g.ID)) {
			c.bad("garden %d: missing from company_gardens", g.ID)
		}
		if (g.ImagePath != nil) != c.has(bucketGardenCoords, k) {
			c.bad("garden %d: image path and coordinates disagree", g.ID)
		}
	})
	c.each(bucketCompanyGardens, func(k, _ []byte) {
		if g, ok := c.gardenM[btoi(k[8:])]; !ok || g.Company != btoi(k) {
			c.bad("company_gardens %d|%d: no such garden of that company", btoi(k), btoi(k[8:]))
		}
	})
	c.each(bucketGardenCoords, func(k, _ []byte) {
		if g, ok := c.gardenM[btoi(k)]; !ok || g.ImagePath == nil {
			c.bad("garden_coords %d: no garden with an image", btoi(k))
		}
	})
}

func (c *indexCheck) permissions() {
	admins := map[uint64]int{}
	ids := map[string]map[uint64]bool{}
	perm := func(bucket, k []byte) (permValue, bool) {
		p, _, err := getPerm(c.tx.Bucket(bucket), k)
		if err != nil {
			c.bad("%s: %v", bucket, err)
			return p, false
		}
		if ids[string(bucket)] == nil {
			ids[string(bucket)] = map[uint64]bool{}
		}
		if ids[string(bucket)][p.id] {
			c.bad("%s %x: id %d used twice", bucket, k, p.id)
		}
		ids[string(bucket)][p.id] = true
		if !c.has(bucketUsers, k[8:]) {
			c.bad("%s %x: user %d does not exist", bucket, k, btoi(k[8:]))
		}
		return p, true
	}
	c.each(bucketPermCompany, func(k, _ []byte) {
		p, ok := perm(bucketPermCompany, k)
		companyID, userID := btoi(k), btoi(k[8:])
		if ok && p.level == store.LevelAdmin {
			admins[companyID]++
		}
		if !c.has(bucketCompanies, k[:8]) {
			c.bad("perm_company %d|%d: company does not exist", companyID, userID)
		}
		if !c.has(bucketUserCompany, pairKey(userID, companyID)) {
			c.bad("perm_company %d|%d: missing from perm_user_company", companyID, userID)
		}
	})
	c.each(bucketUserCompany, func(k, _ []byte) {
		if !c.has(bucketPermCompany, pairKey(btoi(k[8:]), btoi(k))) {
			c.bad("perm_user_company %d|%d: no permission", btoi(k), btoi(k[8:]))
		}
	})
	// A company made in gardend always has an admin (the last-admin rule keeps one);
	// one imported from another system may have come without (store/import.go).
	importedCompanies := importedBy(c.tx, "", store.ImportCompanies)
	c.each(bucketCompanies, func(k, _ []byte) {
		// A replica's admin is its home's business (docs/sync.md).
		if admins[btoi(k)] == 0 && !importedCompanies[btoi(k)] && store.IsLocal(btoi(k)) {
			c.bad("company %d has no admin", btoi(k))
		}
	})
	c.each(bucketPermGarden, func(k, _ []byte) {
		perm(bucketPermGarden, k)
		gardenID, userID := btoi(k), btoi(k[8:])
		g, ok := c.gardenM[gardenID]
		if !ok {
			c.bad("perm_garden %d|%d: garden does not exist", gardenID, userID)
			return
		}
		if !c.has(bucketUserGarden, tripleKey(userID, g.Company, gardenID)) {
			c.bad("perm_garden %d|%d: missing from perm_user_garden", gardenID, userID)
		}
	})
	c.each(bucketUserGarden, func(k, _ []byte) {
		userID, companyID, gardenID := btoi(k), btoi(k[8:]), btoi(k[16:])
		if g, ok := c.gardenM[gardenID]; !ok || g.Company != companyID || !c.has(bucketPermGarden, pairKey(gardenID, userID)) {
			c.bad("perm_user_garden %d|%d|%d: no such permission", userID, companyID, gardenID)
		}
	})
}

func (c *indexCheck) beds() {
	c.bedM = map[uint64]store.Bed{}
	c.each(bucketBeds, func(k, v []byte) {
		var rec bedRecord
		if err := json.Unmarshal(v, &rec); err != nil || rec.ID != btoi(k) {
			c.bad("bed %d: undecodable or wrong id (%v)", btoi(k), err)
			return
		}
		b := rec.bed()
		c.bedM[b.ID] = b
		if _, ok := c.gardenM[b.Garden]; !ok {
			c.bad("bed %d: garden %d does not exist", b.ID, b.Garden)
		}
		if !c.has(bucketGardenBeds, pairKey(b.Garden, b.ID)) {
			c.bad("bed %d: missing from garden_beds", b.ID)
		}
		if v := c.tx.Bucket(bucketBedUUIDs).Get(bedUUIDKey(b.UUID, b.Garden)); !bytes.Equal(v, itob(b.ID)) {
			c.bad("bed %d: bed_uuids does not point at it", b.ID)
		}
	})
	c.each(bucketGardenBeds, func(k, _ []byte) {
		if b, ok := c.bedM[btoi(k[8:])]; !ok || b.Garden != btoi(k) {
			c.bad("garden_beds %d|%d: no such bed of that garden", btoi(k), btoi(k[8:]))
		}
	})
	c.each(bucketBedUUIDs, func(k, v []byte) {
		b, ok := c.bedM[btoi(v)]
		if !ok || !bytes.Equal(k, bedUUIDKey(b.UUID, b.Garden)) {
			c.bad("bed_uuids %q: no such bed", k)
		}
	})
}

// clouds: every position and queued download sits under its own key and belongs to a
// project some bed refers to (deleting the last such bed deletes them).
func (c *indexCheck) clouds() {
	for _, name := range [][]byte{bucketPositions, bucketCloudJobs} {
		c.each(name, func(k, v []byte) {
			var r struct{ Project, Cloud string }
			if err := json.Unmarshal(v, &r); err != nil || !bytes.Equal(k, cloudKey(r.Project, r.Cloud)) {
				c.bad("%s %q: undecodable or under the wrong key (%v)", name, k, err)
				return
			}
			if !projectReferenced(c.tx, r.Project) {
				c.bad("%s %q: no bed refers to project %s", name, k, r.Project)
			}
		})
	}
}

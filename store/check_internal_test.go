package store

import (
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestCheckIndexesFindsDamage breaks one relation at a time and expects CheckIndexes
// to name it, so that a clean result at test cleanup means something.
func TestCheckIndexesFindsDamage(t *testing.T) {
	tests := []struct {
		want   string
		damage func(tx *bolt.Tx, ids fixtureIDs) error
	}{
		{"missing from company_gardens", func(tx *bolt.Tx, f fixtureIDs) error {
			return tx.Bucket(bucketCompanyGardens).Delete(pairKey(f.company, f.garden))
		}},
		{"missing from perm_user_company", func(tx *bolt.Tx, f fixtureIDs) error {
			return tx.Bucket(bucketUserCompany).Delete(pairKey(f.user, f.company))
		}},
		{"perm_user_garden", func(tx *bolt.Tx, f fixtureIDs) error {
			return tx.Bucket(bucketPermGarden).Delete(pairKey(f.garden, f.user))
		}},
		{"has no admin", func(tx *bolt.Tx, f fixtureIDs) error {
			return tx.Bucket(bucketPermCompany).Put(pairKey(f.company, f.user), permValue{id: 1, level: LevelUser}.encode())
		}},
		{"bed_uuids", func(tx *bolt.Tx, f fixtureIDs) error {
			return tx.Bucket(bucketBedUUIDs).Put(bedUUIDKey("stray", f.garden), itob(99))
		}},
		{"image path and coordinates disagree", func(tx *bolt.Tx, f fixtureIDs) error {
			return tx.Bucket(bucketGardenCoords).Delete(itob(f.garden))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			st, f := openFixture(t)
			defer st.Close()
			if err := st.CheckIndexes(); err != nil {
				t.Fatalf("clean fixture: %v", err)
			}
			if err := st.db.Update(func(tx *bolt.Tx) error { return tc.damage(tx, f) }); err != nil {
				t.Fatal(err)
			}
			err := st.CheckIndexes()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("CheckIndexes = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

type fixtureIDs struct{ user, company, garden uint64 }

func openFixture(t *testing.T) (*Store, fixtureIDs) {
	st, err := Open(filepath.Join(t.TempDir(), FileName), Options{})
	if err != nil {
		t.Fatal(err)
	}
	u, err := st.CreateUser(NewUser{Username: "alice", FirstName: "A", LastName: "L", PasswordHash: "x"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := st.CreateCompany(u.ID, "c")
	if err != nil {
		t.Fatal(err)
	}
	g, err := st.CreateGarden(c.ID, "g")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetGardenPermission(g.ID, 0, "alice", LevelUser); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetGardenImage(g.ID, "images/x.png", Coordinates{{"top_left", 1, 1}, {"top_right", 1, 2}, {"bottom_left", 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateBed(g.ID, "p1", ""); err != nil {
		t.Fatal(err)
	}
	return st, fixtureIDs{user: u.ID, company: c.ID, garden: g.ID}
}

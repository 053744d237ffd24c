package bolt

import (
	"path/filepath"
	"strings"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/gardend/gardend/store"
)

// TestCheckIndexesFindsDamage breaks one relation at a time and expects CheckIndexes
// to name it, so that a clean result at test cleanup means something.
func TestCheckIndexesFindsDamage(t *testing.T) {
	tests := []struct {
		want   string
		damage func(tx *bbolt.Tx, ids fixtureIDs) error
	}{
		{"missing from company_gardens", func(tx *bbolt.Tx, f fixtureIDs) error {
			return tx.Bucket(bucketCompanyGardens).Delete(pairKey(f.company, f.garden))
		}},
		{"missing from perm_user_company", func(tx *bbolt.Tx, f fixtureIDs) error {
			return tx.Bucket(bucketUserCompany).Delete(pairKey(f.user, f.company))
		}},
		{"perm_user_garden", func(tx *bbolt.Tx, f fixtureIDs) error {
			return tx.Bucket(bucketPermGarden).Delete(pairKey(f.garden, f.user))
		}},
		{"has no admin", func(tx *bbolt.Tx, f fixtureIDs) error {
			return tx.Bucket(bucketPermCompany).Put(pairKey(f.company, f.user), permValue{id: 1, level: store.LevelUser}.encode())
		}},
		{"bed_uuids", func(tx *bbolt.Tx, f fixtureIDs) error {
			return tx.Bucket(bucketBedUUIDs).Put(bedUUIDKey("stray", f.garden), itob(99))
		}},
		{"image path and coordinates disagree", func(tx *bbolt.Tx, f fixtureIDs) error {
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
			if err := st.db.Update(func(tx *bbolt.Tx) error { return tc.damage(tx, f) }); err != nil {
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
	u, err := st.CreateUser(store.NewUser{Username: "alice", FirstName: "A", LastName: "L", PasswordHash: "x"})
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
	if _, err := st.SetGardenPermission(g.ID, 0, "alice", store.LevelUser); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetGardenImage(g.ID, "images/x.png", store.Coordinates{{Name: "top_left", Latitude: 1, Longitude: 1}, {Name: "top_right", Latitude: 1, Longitude: 2}, {Name: "bottom_left", Longitude: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateBed(g.ID, "p1", ""); err != nil {
		t.Fatal(err)
	}
	return st, fixtureIDs{user: u.ID, company: c.ID, garden: g.ID}
}

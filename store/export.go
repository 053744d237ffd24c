package store

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

var _ Archiver = (*Store)(nil)

// Export writes every record to w as an archive, from one read transaction.
func (s *Store) Export(ctx context.Context, w io.Writer) error {
	aw, err := NewArchiveWriter(w, s.now())
	if err != nil {
		return err
	}
	err = s.db.View(func(tx *bolt.Tx) error {
		var err error
		each := func(bucket []byte, kind string, conv func(k, v []byte) (any, error)) {
			if err != nil {
				return
			}
			err = tx.Bucket(bucket).ForEach(func(k, v []byte) error {
				if err := ctx.Err(); err != nil {
					return err
				}
				rec, err := conv(k, v)
				if err != nil || rec == nil {
					return err
				}
				return aw.Write(kind, rec)
			})
		}
		each(bucketUsers, KindUser, func(k, v []byte) (any, error) {
			var r userRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return nil, fmt.Errorf("decode user %d: %w", btoi(k), err)
			}
			return ArchivedUser{User: r.User, PasswordHash: r.PasswordHash, CredentialsGen: r.CredentialsGen}, nil
		})
		each(bucketTokens, KindToken, func(k, v []byte) (any, error) {
			userID, created, expiry, ok := decodeToken(v)
			if !ok {
				return nil, fmt.Errorf("token record of %d bytes: corrupt", len(v))
			}
			return ArchivedToken{Digest: bytes.Clone(k), UserID: userID, Created: created, Expiry: expiry}, nil
		})
		each(bucketWidgets, KindWidgets, func(k, v []byte) (any, error) {
			return ArchivedWidgets{UserID: btoi(k), Doc: bytes.Clone(v)}, nil
		})
		each(bucketCompanies, KindCompany, func(k, v []byte) (any, error) {
			return getRecord[Company](tx, bucketCompanies, "company", btoi(k))
		})
		each(bucketGardens, KindGarden, func(k, v []byte) (any, error) {
			g, err := getGarden(tx, btoi(k))
			if err != nil {
				return nil, err
			}
			ag := ArchivedGarden{Garden: g}
			if g.ImagePath != nil {
				if err := getJSON(tx.Bucket(bucketGardenCoords), k, &ag.Coordinates); err != nil {
					return nil, fmt.Errorf("coordinates of garden %d: %v", g.ID, err)
				}
			}
			return ag, nil
		})
		for _, kind := range []struct {
			bucket []byte
			name   string
		}{{bucketPermCompany, KindCompanyPermission}, {bucketPermGarden, KindGardenPermission}} {
			if err != nil {
				break
			}
			// By permission id, as the other backend writes them.
			var perms []ArchivedPermission
			b := tx.Bucket(kind.bucket)
			err = b.ForEach(func(k, _ []byte) error {
				p, _, err := getPerm(b, k)
				perms = append(perms, ArchivedPermission{ID: p.id, On: btoi(k), UserID: btoi(k[8:]), Level: p.level})
				return err
			})
			slices.SortFunc(perms, func(a, b ArchivedPermission) int { return cmp.Compare(a.ID, b.ID) })
			for _, p := range perms {
				if err == nil {
					err = aw.Write(kind.name, p)
				}
			}
		}
		each(bucketBeds, KindBed, func(k, v []byte) (any, error) {
			b, err := getBed(tx, btoi(k))
			return ArchivedBed{Bed: b, Garden: b.Garden}, err
		})
		each(bucketPositions, KindPosition, func(k, v []byte) (any, error) {
			var p PlantPosition
			return p, json.Unmarshal(v, &p)
		})
		each(bucketCloudJobs, KindCloudJob, func(k, v []byte) (any, error) {
			var j CloudJob
			err := json.Unmarshal(v, &j)
			// Claims belong to the nodes of this install, not to the records.
			j.ClaimedBy, j.ClaimUntil = "", time.Time{}
			return j, err
		})
		return err
	})
	if err != nil {
		return err
	}
	return aw.Close()
}

// Import loads an archive into this store, which must hold no user and no company,
// in one write transaction: on any error nothing is written.
func (s *Store) Import(ctx context.Context, r io.Reader) error {
	defer s.users.invalidate(0)
	return s.db.Update(func(tx *bolt.Tx) error {
		if k, _ := tx.Bucket(bucketUsers).Cursor().First(); k != nil {
			return fmt.Errorf("%w: the store holds users already; import into an empty one", ErrConflict)
		}
		if k, _ := tx.Bucket(bucketCompanies).Cursor().First(); k != nil {
			return fmt.Errorf("%w: the store holds companies already; import into an empty one", ErrConflict)
		}
		maxID := map[string]uint64{}
		seen := func(bucket []byte, id uint64) {
			maxID[string(bucket)] = max(maxID[string(bucket)], id)
		}
		fresh := func(bucket []byte, key []byte, what string) error {
			if tx.Bucket(bucket).Get(key) != nil {
				return fmt.Errorf("%w: %s appears twice", ErrInvalid, what)
			}
			return nil
		}
		exists := func(bucket []byte, id uint64, what string) error {
			if tx.Bucket(bucket).Get(itob(id)) == nil {
				return fmt.Errorf("%w: %s %d is not in the archive", ErrInvalid, what, id)
			}
			return nil
		}
		err := ReadArchive(ctx, r, func(kind string, rec any) error {
			switch r := rec.(type) {
			case *ArchivedUser:
				if err := fresh(bucketUsers, itob(r.ID), fmt.Sprintf("user %d", r.ID)); err != nil {
					return err
				}
				if err := fresh(bucketUsernames, []byte(r.Username), fmt.Sprintf("username %q", r.Username)); err != nil {
					return err
				}
				seen(bucketUsers, r.ID)
				if err := putUsername(tx, r.Username, r.ID); err != nil {
					return err
				}
				return putJSON(tx.Bucket(bucketUsers), itob(r.ID), userRecord{User: r.User, PasswordHash: r.PasswordHash, CredentialsGen: r.CredentialsGen})
			case *ArchivedToken:
				if err := exists(bucketUsers, r.UserID, "user"); err != nil {
					return err
				}
				if err := tx.Bucket(bucketTokens).Put(r.Digest, encodeToken(r.UserID, r.Created, r.Expiry)); err != nil {
					return err
				}
				return tx.Bucket(bucketUserToks).Put(userTokenKey(r.UserID, r.Digest), present)
			case *ArchivedWidgets:
				if err := exists(bucketUsers, r.UserID, "user"); err != nil {
					return err
				}
				return tx.Bucket(bucketWidgets).Put(itob(r.UserID), r.Doc)
			case *Company:
				if err := fresh(bucketCompanies, itob(r.ID), fmt.Sprintf("company %d", r.ID)); err != nil {
					return err
				}
				seen(bucketCompanies, r.ID)
				return putJSON(tx.Bucket(bucketCompanies), itob(r.ID), r)
			case *ArchivedGarden:
				if err := fresh(bucketGardens, itob(r.ID), fmt.Sprintf("garden %d", r.ID)); err != nil {
					return err
				}
				if err := exists(bucketCompanies, r.Company, "company"); err != nil {
					return err
				}
				seen(bucketGardens, r.ID)
				if r.ImagePath != nil {
					if err := putJSON(tx.Bucket(bucketGardenCoords), itob(r.ID), r.Coordinates); err != nil {
						return err
					}
				}
				if err := tx.Bucket(bucketCompanyGardens).Put(pairKey(r.Company, r.ID), present); err != nil {
					return err
				}
				return putJSON(tx.Bucket(bucketGardens), itob(r.ID), r.Garden)
			case *ArchivedPermission:
				if err := exists(bucketUsers, r.UserID, "user"); err != nil {
					return err
				}
				bucket := bucketPermCompany
				if kind == KindGardenPermission {
					bucket = bucketPermGarden
				}
				if err := fresh(bucket, pairKey(r.On, r.UserID), fmt.Sprintf("%s of user %d on %d", kind, r.UserID, r.On)); err != nil {
					return err
				}
				var index []byte
				if kind == KindCompanyPermission {
					if err := exists(bucketCompanies, r.On, "company"); err != nil {
						return err
					}
					index = pairKey(r.UserID, r.On)
				} else {
					if err := exists(bucketGardens, r.On, "garden"); err != nil {
						return err
					}
					g, err := getGarden(tx, r.On)
					if err != nil {
						return err
					}
					index = tripleKey(r.UserID, g.Company, g.ID)
				}
				seen(bucket, r.ID)
				if err := tx.Bucket(bucket).Put(pairKey(r.On, r.UserID), permValue{id: r.ID, level: r.Level}.encode()); err != nil {
					return err
				}
				indexBucket := bucketUserCompany
				if kind == KindGardenPermission {
					indexBucket = bucketUserGarden
				}
				return tx.Bucket(indexBucket).Put(index, present)
			case *ArchivedBed:
				if err := fresh(bucketBeds, itob(r.ID), fmt.Sprintf("bed %d", r.ID)); err != nil {
					return err
				}
				if err := fresh(bucketBedUUIDs, bedUUIDKey(r.UUID, r.Garden), fmt.Sprintf("bed uuid %s in garden %d", r.UUID, r.Garden)); err != nil {
					return err
				}
				if err := exists(bucketGardens, r.Garden, "garden"); err != nil {
					return err
				}
				seen(bucketBeds, r.ID)
				if err := putJSON(tx.Bucket(bucketBeds), itob(r.ID), bedRecord{Bed: r.Bed, Garden: r.Garden}); err != nil {
					return err
				}
				if err := tx.Bucket(bucketGardenBeds).Put(pairKey(r.Garden, r.ID), present); err != nil {
					return err
				}
				return tx.Bucket(bucketBedUUIDs).Put(bedUUIDKey(r.UUID, r.Garden), itob(r.ID))
			case *PlantPosition:
				if !projectReferenced(tx, r.Project) {
					return fmt.Errorf("%w: no bed in the archive refers to project %s", ErrInvalid, r.Project)
				}
				return putJSON(tx.Bucket(bucketPositions), cloudKey(r.Project, r.Cloud), r)
			case *CloudJob:
				if !projectReferenced(tx, r.Project) {
					return fmt.Errorf("%w: no bed in the archive refers to project %s", ErrInvalid, r.Project)
				}
				r.ClaimedBy, r.ClaimUntil = "", time.Time{}
				return putJSON(tx.Bucket(bucketCloudJobs), cloudKey(r.Project, r.Cloud), r)
			}
			return fmt.Errorf("archive: unexpected %s record", kind)
		})
		if err != nil {
			return err
		}
		// What CheckIndexes would find wrong (a company without admin, two
		// permissions with one id) is a bad archive, not a store to open.
		c := &indexCheck{tx: tx}
		c.gardens()
		c.permissions()
		c.beds()
		c.clouds()
		if len(c.errs) > 0 {
			return fmt.Errorf("%w: the archive breaks the rules of the records: %v", ErrInvalid, errors.Join(c.errs...))
		}
		// New records get ids past the imported ones.
		for name, id := range maxID {
			b := tx.Bucket([]byte(name))
			if b.Sequence() < id {
				if err := b.SetSequence(id); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// present is the value of an index entry written by Import. Not nil: inside the
// write transaction bbolt's Get answers nil for a key whose value is nil, and the
// check Import runs before it commits must see the entries.
var present = []byte{}

package bolt

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

	bbolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/gardend/gardend/store"
)

var _ store.Archiver = (*Store)(nil)

// Export writes every record to w as an archive, from one read transaction.
func (s *Store) Export(ctx context.Context, w io.Writer) error {
	var aw *store.ArchiveWriter
	err := s.db.View(func(tx *bbolt.Tx) error {
		var err error
		aw, err = store.NewArchiveWriter(w, store.ArchiveHeader{Exported: s.now(), DataID: string(tx.Bucket(bucketMeta).Get(keyDataID))})
		if err != nil {
			return err
		}
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
		each(bucketUsers, store.KindUser, func(k, v []byte) (any, error) {
			var r userRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return nil, fmt.Errorf("decode user %d: %w", btoi(k), err)
			}
			return store.ArchivedUser{User: r.User, PasswordHash: r.PasswordHash, CredentialsGen: r.CredentialsGen}, nil
		})
		each(bucketTokens, store.KindToken, func(k, v []byte) (any, error) {
			userID, created, expiry, ok := decodeToken(v)
			if !ok {
				return nil, fmt.Errorf("token record of %d bytes: corrupt", len(v))
			}
			return store.ArchivedToken{Digest: bytes.Clone(k), UserID: userID, Created: created, Expiry: expiry}, nil
		})
		each(bucketWidgets, store.KindWidgets, func(k, v []byte) (any, error) {
			return store.ArchivedWidgets{UserID: btoi(k), Doc: bytes.Clone(v)}, nil
		})
		each(bucketCompanies, store.KindCompany, func(k, v []byte) (any, error) {
			return getRecord[store.Company](tx, bucketCompanies, "company", btoi(k))
		})
		each(bucketGardens, store.KindGarden, func(k, v []byte) (any, error) {
			g, err := getGarden(tx, btoi(k))
			if err != nil {
				return nil, err
			}
			ag := store.ArchivedGarden{Garden: g}
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
		}{{bucketPermCompany, store.KindCompanyPermission}, {bucketPermGarden, store.KindGardenPermission}} {
			if err != nil {
				break
			}
			// By permission id, as the other backend writes them.
			var perms []store.ArchivedPermission
			b := tx.Bucket(kind.bucket)
			err = b.ForEach(func(k, _ []byte) error {
				p, _, err := getPerm(b, k)
				perms = append(perms, store.ArchivedPermission{ID: p.id, On: btoi(k), UserID: btoi(k[8:]), Level: p.level})
				return err
			})
			slices.SortFunc(perms, func(a, b store.ArchivedPermission) int { return cmp.Compare(a.ID, b.ID) })
			for _, p := range perms {
				if err == nil {
					err = aw.Write(kind.name, p)
				}
			}
		}
		each(bucketBeds, store.KindBed, func(k, v []byte) (any, error) {
			b, err := getBed(tx, btoi(k))
			return store.ArchivedBed{Bed: b, Garden: b.Garden}, err
		})
		each(bucketPositions, store.KindPosition, func(k, v []byte) (any, error) {
			var p store.PlantPosition
			return p, json.Unmarshal(v, &p)
		})
		each(bucketCloudJobs, store.KindCloudJob, func(k, v []byte) (any, error) {
			var j store.CloudJob
			err := json.Unmarshal(v, &j)
			// Claims belong to the nodes of this install, not to the records.
			j.ClaimedBy, j.ClaimUntil = "", time.Time{}
			return j, err
		})
		if err == nil {
			err = exportImportMap(tx, aw)
		}
		each(bucketPlantIDs, store.KindPlantID, func(k, v []byte) (any, error) {
			project, name, _ := bytes.Cut(k, []byte{0})
			return store.PlantID{Project: string(project), Name: string(name), ID: string(v)}, nil
		})
		each(bucketLogs, store.KindLog, func(k, v []byte) (any, error) {
			return getLog(tx, btoi(k))
		})
		each(bucketPhotos, store.KindPhoto, func(k, v []byte) (any, error) {
			return getPhoto(tx, btoi(k))
		})
		if err == nil {
			err = exportHistory(tx, aw)
		}
		return err
	})
	if err != nil {
		return err
	}
	return aw.Close()
}

// exportImportMap writes the import map by source, kind and key, as the other
// backend does.
func exportImportMap(tx *bbolt.Tx, aw *store.ArchiveWriter) error {
	m := tx.Bucket(bucketImportMap)
	if m == nil {
		return nil
	}
	kinds := map[string]store.ImportKind{}
	for _, k := range store.ImportKinds {
		kinds[mapKey(k)] = k
	}
	var entries []store.ImportMapEntry
	err := m.ForEach(func(k, v []byte) error {
		parts := bytes.SplitN(k, []byte{0}, 3)
		kind, ok := kinds[string(parts[1%len(parts)])]
		if len(parts) != 3 || !ok || len(parts[2]) != 8 || len(v) != 8 {
			return fmt.Errorf("import map entry %q: corrupt", k)
		}
		entries = append(entries, store.ImportMapEntry{Source: string(parts[0]), Kind: kind, Key: btoi(parts[2]), ID: btoi(v)})
		return nil
	})
	slices.SortFunc(entries, func(a, b store.ImportMapEntry) int {
		return cmp.Or(cmp.Compare(a.Source, b.Source), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Key, b.Key))
	})
	for _, e := range entries {
		if err == nil {
			err = aw.Write(store.KindImportMap, e)
		}
	}
	return err
}

// Import loads an archive into this store, which must hold no user and no company,
// in one write transaction: on any error nothing is written.
func (s *Store) Import(ctx context.Context, r io.Reader, opts store.ImportOptions) error {
	if opts.Images != nil {
		return fmt.Errorf("%w: bbolt keeps image content in files beside the database, not in it", store.ErrInvalid)
	}
	defer s.users.invalidate(0)
	return s.db.Update(func(tx *bbolt.Tx) error {
		if opts.Replace {
			if err := clearRecords(tx); err != nil {
				return err
			}
		}
		if k, _ := tx.Bucket(bucketUsers).Cursor().First(); k != nil {
			return fmt.Errorf("%w: the store holds users already; import into an empty one", store.ErrConflict)
		}
		if k, _ := tx.Bucket(bucketCompanies).Cursor().First(); k != nil {
			return fmt.Errorf("%w: the store holds companies already; import into an empty one", store.ErrConflict)
		}
		l := newLoader(tx)
		head, err := store.ReadArchive(ctx, r, l.load, opts.Repaired)
		if err != nil {
			return err
		}
		if err := l.flush(); err != nil {
			return err
		}
		if head.DataID != "" {
			if err := tx.Bucket(bucketMeta).Put(keyDataID, []byte(head.DataID)); err != nil {
				return err
			}
		}
		// What CheckIndexes would find wrong (a company without admin, two
		// permissions with one id) is a bad archive, not a store to open.
		c := &indexCheck{tx: tx}
		c.gardens()
		c.permissions()
		c.beds()
		c.clouds()
		c.logs()
		if len(c.errs) > 0 {
			return fmt.Errorf("%w: the archive breaks the rules of the records: %v", store.ErrInvalid, errors.Join(c.errs...))
		}
		return l.finish()
	})
}

// clearRecords deletes every record (all buckets but meta, with their sequences, and
// the photos' byte count in meta).
func clearRecords(tx *bbolt.Tx) error {
	if err := tx.Bucket(bucketMeta).Delete(keyPhotoBytes); err != nil {
		return err
	}
	for _, name := range allBuckets {
		if string(name) == string(bucketMeta) {
			continue
		}
		if err := tx.DeleteBucket(name); err != nil && !errors.Is(err, bolterrors.ErrBucketNotFound) {
			return err
		}
		if _, err := tx.CreateBucket(name); err != nil {
			return err
		}
	}
	return nil
}

// loader writes records in archive form (store.ReadArchive's, ApplyImport's) into a
// write transaction, checking that each is new and that what it refers to is there.
type loader struct {
	tx *bbolt.Tx
	// maxID is the largest id written per bucket: finish moves the sequences past it.
	maxID map[string]uint64
	// pending are index writes made at the end, in key order (flush).
	pending map[string]*sortedPuts
}

func newLoader(tx *bbolt.Tx) *loader {
	return &loader{tx: tx, maxID: map[string]uint64{}, pending: map[string]*sortedPuts{}}
}

func (l *loader) later(bucket []byte) *sortedPuts {
	p := l.pending[string(bucket)]
	if p == nil {
		p = &sortedPuts{}
		l.pending[string(bucket)] = p
	}
	return p
}

// flush makes the pending index writes.
func (l *loader) flush() error {
	for name, p := range l.pending {
		if err := p.flush(l.tx.Bucket([]byte(name))); err != nil {
			return err
		}
	}
	clear(l.pending)
	return nil
}

func (l *loader) seen(bucket []byte, id uint64) {
	if !store.IsLocal(id) {
		return // a replica's id (docs/sync.md): local ids go on below it
	}
	l.maxID[string(bucket)] = max(l.maxID[string(bucket)], id)
}

func (l *loader) fresh(bucket []byte, key []byte, what string) error {
	if l.tx.Bucket(bucket).Get(key) != nil {
		return fmt.Errorf("%w: %s appears twice", store.ErrInvalid, what)
	}
	return nil
}

func (l *loader) exists(bucket []byte, id uint64, what string) error {
	if l.tx.Bucket(bucket).Get(itob(id)) == nil {
		return fmt.Errorf("%w: %s %d is not in the archive", store.ErrInvalid, what, id)
	}
	return nil
}

// finish moves the id sequences past the ids written, so new records get new ids.
func (l *loader) finish() error {
	for name, id := range l.maxID {
		b := l.tx.Bucket([]byte(name))
		if b.Sequence() < id {
			if err := b.SetSequence(id); err != nil {
				return err
			}
		}
	}
	return nil
}

// load writes one record; kind is its archive kind.
func (l *loader) load(kind string, rec any) error {
	tx := l.tx
	switch r := rec.(type) {
	case *store.ArchivedUser:
		if err := l.fresh(bucketUsers, itob(r.ID), fmt.Sprintf("user %d", r.ID)); err != nil {
			return err
		}
		if err := l.fresh(bucketUsernames, []byte(r.Username), fmt.Sprintf("username %q", r.Username)); err != nil {
			return err
		}
		l.seen(bucketUsers, r.ID)
		if err := putUsername(tx, r.Username, r.ID); err != nil {
			return err
		}
		return putJSON(tx.Bucket(bucketUsers), itob(r.ID), userRecord{User: r.User, PasswordHash: r.PasswordHash, CredentialsGen: r.CredentialsGen})
	case *store.ArchivedToken:
		if err := l.exists(bucketUsers, r.UserID, "user"); err != nil {
			return err
		}
		if err := tx.Bucket(bucketTokens).Put(r.Digest, encodeToken(r.UserID, r.Created, r.Expiry)); err != nil {
			return err
		}
		return tx.Bucket(bucketUserToks).Put(userTokenKey(r.UserID, r.Digest), present)
	case *store.ArchivedWidgets:
		if err := l.exists(bucketUsers, r.UserID, "user"); err != nil {
			return err
		}
		return tx.Bucket(bucketWidgets).Put(itob(r.UserID), r.Doc)
	case *store.Company:
		if err := l.fresh(bucketCompanies, itob(r.ID), fmt.Sprintf("company %d", r.ID)); err != nil {
			return err
		}
		l.seen(bucketCompanies, r.ID)
		return putJSON(tx.Bucket(bucketCompanies), itob(r.ID), r)
	case *store.ArchivedGarden:
		if err := l.fresh(bucketGardens, itob(r.ID), fmt.Sprintf("garden %d", r.ID)); err != nil {
			return err
		}
		if err := l.exists(bucketCompanies, r.Company, "company"); err != nil {
			return err
		}
		l.seen(bucketGardens, r.ID)
		if r.ImagePath != nil {
			if err := putJSON(tx.Bucket(bucketGardenCoords), itob(r.ID), r.Coordinates); err != nil {
				return err
			}
		}
		if err := tx.Bucket(bucketCompanyGardens).Put(pairKey(r.Company, r.ID), present); err != nil {
			return err
		}
		return putJSON(tx.Bucket(bucketGardens), itob(r.ID), r.Garden)
	case *store.ArchivedPermission:
		if err := l.exists(bucketUsers, r.UserID, "user"); err != nil {
			return err
		}
		bucket, indexBucket := bucketPermCompany, bucketUserCompany
		if kind == store.KindGardenPermission {
			bucket, indexBucket = bucketPermGarden, bucketUserGarden
		}
		if err := l.fresh(bucket, pairKey(r.On, r.UserID), fmt.Sprintf("%s of user %d on %d", kind, r.UserID, r.On)); err != nil {
			return err
		}
		var index []byte
		if kind == store.KindCompanyPermission {
			if err := l.exists(bucketCompanies, r.On, "company"); err != nil {
				return err
			}
			index = pairKey(r.UserID, r.On)
		} else {
			if err := l.exists(bucketGardens, r.On, "garden"); err != nil {
				return err
			}
			g, err := getGarden(tx, r.On)
			if err != nil {
				return err
			}
			index = tripleKey(r.UserID, g.Company, g.ID)
		}
		l.seen(bucket, r.ID)
		if err := tx.Bucket(bucket).Put(pairKey(r.On, r.UserID), permValue{id: r.ID, level: r.Level}.encode()); err != nil {
			return err
		}
		return tx.Bucket(indexBucket).Put(index, present)
	case *store.ArchivedBed:
		if err := l.fresh(bucketBeds, itob(r.ID), fmt.Sprintf("bed %d", r.ID)); err != nil {
			return err
		}
		if err := l.fresh(bucketBedUUIDs, bedUUIDKey(r.UUID, r.Garden), fmt.Sprintf("bed uuid %s in garden %d", r.UUID, r.Garden)); err != nil {
			return err
		}
		if err := l.exists(bucketGardens, r.Garden, "garden"); err != nil {
			return err
		}
		l.seen(bucketBeds, r.ID)
		if err := putJSON(tx.Bucket(bucketBeds), itob(r.ID), bedRecord{Bed: r.Bed, Garden: r.Garden}); err != nil {
			return err
		}
		if err := tx.Bucket(bucketGardenBeds).Put(pairKey(r.Garden, r.ID), present); err != nil {
			return err
		}
		return tx.Bucket(bucketBedUUIDs).Put(bedUUIDKey(r.UUID, r.Garden), itob(r.ID))
	case *store.PlantPosition:
		if !projectReferenced(tx, r.Project) {
			return fmt.Errorf("%w: no bed in the archive refers to project %s", store.ErrInvalid, r.Project)
		}
		return putJSON(tx.Bucket(bucketPositions), cloudKey(r.Project, r.Cloud), r)
	case *store.CloudJob:
		if !projectReferenced(tx, r.Project) {
			return fmt.Errorf("%w: no bed in the archive refers to project %s", store.ErrInvalid, r.Project)
		}
		r.ClaimedBy, r.ClaimUntil = "", time.Time{}
		return putJSON(tx.Bucket(bucketCloudJobs), cloudKey(r.Project, r.Cloud), r)
	case *store.PlantID:
		if !projectReferenced(tx, r.Project) {
			return fmt.Errorf("%w: no bed in the archive refers to project %s", store.ErrInvalid, r.Project)
		}
		if err := l.fresh(bucketPlantIDs, cloudKey(r.Project, r.Name), fmt.Sprintf("plant name %q of project %s", r.Name, r.Project)); err != nil {
			return err
		}
		if err := l.fresh(bucketPlantIDNames, cloudKey(r.Project, r.ID), fmt.Sprintf("plant id %s of project %s", r.ID, r.Project)); err != nil {
			return err
		}
		return putPlantID(tx, *r)
	case *store.ArchivedLog:
		if err := l.fresh(bucketLogs, itob(r.ID), fmt.Sprintf("log %d", r.ID)); err != nil {
			return err
		}
		if err := l.exists(bucketGardens, r.Garden, "garden"); err != nil {
			return err
		}
		if err := l.exists(bucketUsers, r.AuthorID, "user"); err != nil {
			return err
		}
		if r.AssigneeID != 0 {
			if err := l.exists(bucketUsers, r.AssigneeID, "user"); err != nil {
				return err
			}
		}
		l.seen(bucketLogs, r.ID)
		if err := putJSON(tx.Bucket(bucketLogs), itob(r.ID), r); err != nil {
			return err
		}
		// The index entries are written at the end, in order (sortedPuts).
		return eachLogIndexEntry(*r, func(bucket, k, v []byte) error {
			l.later(bucket).add(k, v)
			return nil
		})
	case *store.Photo:
		if err := l.fresh(bucketPhotos, itob(r.ID), fmt.Sprintf("photo %d", r.ID)); err != nil {
			return err
		}
		a, err := getLog(tx, r.Log)
		if err != nil || a.Garden != r.Garden {
			return fmt.Errorf("%w: log %d of garden %d is not in the archive", store.ErrInvalid, r.Log, r.Garden)
		}
		l.seen(bucketPhotos, r.ID)
		if err := putJSON(tx.Bucket(bucketPhotos), itob(r.ID), r); err != nil {
			return err
		}
		if err := tx.Bucket(bucketLogPhotos).Put(pairKey(r.Log, r.ID), present); err != nil {
			return err
		}
		return addPhotoBytes(tx, r.Bytes())
	case *store.ImportMapEntry:
		key := importMapKey(r.Source, r.Kind, r.Key)
		if err := l.fresh(bucketImportMap, key, fmt.Sprintf("import map entry %s/%s/%d", r.Source, r.Kind, r.Key)); err != nil {
			return err
		}
		return tx.Bucket(bucketImportMap).Put(key, itob(r.ID))
	}
	if handled, err := l.loadHistory(rec); handled {
		return err
	}
	return fmt.Errorf("archive: unexpected %s record", kind)
}

// present is the value of an index entry written by Import. Not nil: inside the
// write transaction bbolt's Get answers nil for a key whose value is nil, and the
// check Import runs before it commits must see the entries.
var present = []byte{}

package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/gardend/gardend/store"
)

var _ store.ReplicaStore = (*Store)(nil)

func siteKey(site uint32) []byte {
	k := make([]byte, 4)
	binary.BigEndian.PutUint32(k, site)
	return k
}

// ReplicaCursor is the last sequence applied from site.
func (s *Store) ReplicaCursor(site uint32) (uint64, error) {
	var seq uint64
	err := s.db.View(func(tx *bbolt.Tx) error {
		if v := tx.Bucket(bucketReplicaCursors).Get(siteKey(site)); v != nil {
			seq = btoi(v)
		}
		return nil
	})
	return seq, err
}

// ApplyReplica runs fn in one write transaction with the site's cursor.
func (s *Store) ApplyReplica(site uint32, siteName string, fn func(w store.ReplicaWriter, cursor uint64) (uint64, error)) (store.Removed, error) {
	// Replica users may change: the cache forgets them all after the commit.
	defer s.users.reset()
	return s.deleteInTx(func(tx *bbolt.Tx, r *store.Removed) error {
		cursors := tx.Bucket(bucketReplicaCursors)
		var cur uint64
		if v := cursors.Get(siteKey(site)); v != nil {
			cur = btoi(v)
		}
		next, err := fn(&replicaWriter{tx: tx, site: siteName, removed: r}, cur)
		if err != nil {
			return err
		}
		return cursors.Put(siteKey(site), itob(next))
	})
}

// replicaWriter writes replicas in one transaction.
type replicaWriter struct {
	tx      *bbolt.Tx
	site    string
	removed *store.Removed
}

func (w *replicaWriter) PutUser(u store.ReplicaUser) error {
	tx := w.tx
	users := tx.Bucket(bucketUsers)
	rec, err := getRecord[userRecord](tx, bucketUsers, "user", u.ID)
	isNew := errors.Is(err, store.ErrNotFound)
	if err != nil && !isNew {
		return err
	}
	name := rec.Username
	if isNew || store.NormalizeUsername(u.Username) != stripReplicaSuffix(rec.Username, u.Username, w.site, u.ID) {
		if name, err = replicaName(tx, u, w.site); err != nil {
			return err
		}
	}
	if !isNew && name != rec.Username {
		if err := deleteUsername(tx, rec.Username, u.ID); err != nil {
			return err
		}
	}
	if isNew || name != rec.Username {
		if err := putUsername(tx, name, u.ID); err != nil {
			return err
		}
	}
	if !isNew && rec.PasswordHash != u.PasswordHash {
		rec.CredentialsGen++
		if _, err := revokeUserTokens(tx, u.ID, nil); err != nil {
			return err
		}
	}
	rec.ID, rec.Username, rec.FirstName, rec.LastName, rec.Email = u.ID, name, u.FirstName, u.LastName, u.Email
	rec.DateJoined, rec.PasswordHash, rec.SiteAdmin = u.DateJoined.UTC().Truncate(time.Microsecond), u.PasswordHash, false
	if err := putJSON(users, itob(u.ID), rec); err != nil {
		return err
	}
	if u.Widgets == nil {
		return tx.Bucket(bucketWidgets).Delete(itob(u.ID))
	}
	return tx.Bucket(bucketWidgets).Put(itob(u.ID), u.Widgets)
}

// stripReplicaSuffix returns home when stored is one of the names a replica of home
// takes here (store.ReplicaUsername), so that an unchanged name keeps its spelling;
// else stored itself.
func stripReplicaSuffix(stored, home, site string, id uint64) string {
	home = store.NormalizeUsername(home)
	for try := range store.ReplicaUsernameTries {
		if stored == store.ReplicaUsername(home, site, id, try) {
			return home
		}
	}
	return stored
}

// replicaName is the first of the names store.ReplicaUsername offers that is free.
func replicaName(tx *bbolt.Tx, u store.ReplicaUser, site string) (string, error) {
	home := store.NormalizeUsername(u.Username)
	for try := range store.ReplicaUsernameTries {
		name := store.ReplicaUsername(home, site, u.ID, try)
		err := claimUsername(tx, name, u.ID)
		if err == nil {
			return name, nil
		}
		if !errors.Is(err, store.ErrConflict) {
			return "", err
		}
	}
	return "", fmt.Errorf("%w: user %d of site %s: every name it could take here is taken", store.ErrConflict, u.ID, site)
}

func (w *replicaWriter) PutCompany(c store.Company) error {
	if err := c.Validate(); err != nil {
		return err
	}
	return putJSON(w.tx.Bucket(bucketCompanies), itob(c.ID), c)
}

func (w *replicaWriter) DeleteCompany(id uint64) error {
	if _, err := getCompany(w.tx, id); errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return deleteCompany(w.tx, id, w.removed)
}

func (w *replicaWriter) PutGarden(g store.Garden) error {
	if err := g.Validate(); err != nil {
		return err
	}
	tx := w.tx
	if _, err := getCompany(tx, g.Company); err != nil {
		return err
	}
	old, err := getGarden(tx, g.ID)
	switch {
	case err == nil:
		if old.Company != g.Company {
			return fmt.Errorf("%w: garden %d belongs to company %d, not %d", store.ErrInvalid, g.ID, old.Company, g.Company)
		}
		g.ImagePath = old.ImagePath
	case !errors.Is(err, store.ErrNotFound):
		return err
	default:
		g.ImagePath = nil
	}
	if err := putJSON(tx.Bucket(bucketGardens), itob(g.ID), g); err != nil {
		return err
	}
	return tx.Bucket(bucketCompanyGardens).Put(pairKey(g.Company, g.ID), nil)
}

func (w *replicaWriter) DeleteGarden(id uint64) error {
	g, err := getGarden(w.tx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return deleteGarden(w.tx, g, w.removed)
}

func (w *replicaWriter) SetGardenImage(gardenID uint64, path string, cs store.Coordinates) error {
	if err := store.ValidateImageRecord(path, cs); err != nil {
		return err
	}
	tx := w.tx
	g, err := getGarden(tx, gardenID)
	if err != nil {
		return err
	}
	if g.ImagePath != nil && *g.ImagePath != path {
		w.removed.ImagePaths = append(w.removed.ImagePaths, *g.ImagePath)
	}
	g.ImagePath = &path
	if err := putJSON(tx.Bucket(bucketGardens), itob(g.ID), g); err != nil {
		return err
	}
	return putJSON(tx.Bucket(bucketGardenCoords), itob(g.ID), cs)
}

func (w *replicaWriter) PutBed(b store.Bed) error {
	if err := b.Validate(); err != nil {
		return err
	}
	tx := w.tx
	if _, err := getGarden(tx, b.Garden); err != nil {
		return err
	}
	old, err := getBed(tx, b.ID)
	switch {
	case err == nil:
		if old.Garden != b.Garden || old.UUID != b.UUID {
			// A bed never moves nor changes project at its home; replace it whole.
			if err := deleteBed(tx, old, w.removed); err != nil {
				return err
			}
		}
	case !errors.Is(err, store.ErrNotFound):
		return err
	}
	byUUID := tx.Bucket(bucketBedUUIDs)
	if v := byUUID.Get(bedUUIDKey(b.UUID, b.Garden)); v != nil && btoi(v) != b.ID {
		return store.BedUUIDTaken(b.Garden, b.UUID)
	}
	if err := putJSON(tx.Bucket(bucketBeds), itob(b.ID), bedRecord{Bed: b, Garden: b.Garden}); err != nil {
		return err
	}
	if err := tx.Bucket(bucketGardenBeds).Put(pairKey(b.Garden, b.ID), nil); err != nil {
		return err
	}
	return byUUID.Put(bedUUIDKey(b.UUID, b.Garden), itob(b.ID))
}

func (w *replicaWriter) DeleteBed(id uint64) error {
	b, err := getBed(w.tx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return deleteBed(w.tx, b, w.removed)
}

func (w *replicaWriter) PutCompanyPermission(p store.CompanyPermission) error {
	if err := p.Level.Validate(); err != nil {
		return err
	}
	tx := w.tx
	if _, err := getCompany(tx, p.Company); err != nil {
		return err
	}
	if _, err := getUser(tx, p.UserID); err != nil {
		return err
	}
	if err := tx.Bucket(bucketPermCompany).Put(pairKey(p.Company, p.UserID), permValue{id: p.ID, level: p.Level}.encode()); err != nil {
		return err
	}
	return tx.Bucket(bucketUserCompany).Put(pairKey(p.UserID, p.Company), nil)
}

func (w *replicaWriter) DeleteCompanyPermission(companyID, userID uint64) error {
	return deleteCompanyPerm(w.tx, companyID, userID)
}

func (w *replicaWriter) PutGardenPermission(p store.GardenPermission) error {
	if err := p.Level.Validate(); err != nil {
		return err
	}
	tx := w.tx
	g, err := getGarden(tx, p.Garden)
	if err != nil {
		return err
	}
	if _, err := getUser(tx, p.UserID); err != nil {
		return err
	}
	if err := tx.Bucket(bucketPermGarden).Put(pairKey(g.ID, p.UserID), permValue{id: p.ID, level: p.Level}.encode()); err != nil {
		return err
	}
	return tx.Bucket(bucketUserGarden).Put(tripleKey(p.UserID, g.Company, g.ID), nil)
}

func (w *replicaWriter) DeleteGardenPermission(gardenID, userID uint64) error {
	g, err := getGarden(w.tx, gardenID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return deleteGardenPerm(w.tx, g, userID)
}

func (w *replicaWriter) PutBedValues(v store.BedValues) error {
	if err := v.Validate(); err != nil {
		return err
	}
	if _, err := bedOf(w.tx, v.Garden, v.Bed); err != nil {
		return err
	}
	v.At = v.At.UTC()
	return putJSON(w.tx.Bucket(bucketBedValues), itob(v.Bed), v)
}

func (w *replicaWriter) PutLog(l store.ArchivedLog) error {
	l = replicaLog(l)
	if err := store.ValidateLog(l.Log(), l.Updated); err != nil {
		return err
	}
	tx := w.tx
	if _, err := getGarden(tx, l.Garden); err != nil {
		return err
	}
	for _, u := range []uint64{l.AuthorID, l.AssigneeID} {
		if u == 0 {
			continue
		}
		if _, err := getRecord[userRecord](tx, bucketUsers, "user", u); err != nil {
			return err
		}
	}
	old, err := getLog(tx, l.ID)
	switch {
	case err == nil:
		if err := putLogIndex(tx, old, true); err != nil {
			return err
		}
	case !errors.Is(err, store.ErrNotFound):
		return err
	}
	if err := putJSON(tx.Bucket(bucketLogs), itob(l.ID), l); err != nil {
		return err
	}
	return putLogIndex(tx, l, false)
}

// replicaLog is a log as received, with its times as a log keeps them.
func replicaLog(l store.ArchivedLog) store.ArchivedLog {
	l.At, l.Created, l.Updated = store.LogTime(l.At), store.LogTime(l.Created), store.LogTime(l.Updated)
	return l
}

func (w *replicaWriter) DeleteLog(id uint64) error {
	a, err := getLog(w.tx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return deleteLog(w.tx, a, w.removed)
}

func (w *replicaWriter) PutPhoto(p store.Photo) error {
	p.Created = store.LogTime(p.Created)
	p.ClientKey = ""
	if err := p.Validate(); err != nil {
		return err
	}
	tx := w.tx
	if _, err := logOf(tx, p.Garden, p.Log); err != nil {
		return err
	}
	if _, err := getRecord[userRecord](tx, bucketUsers, "user", p.Uploader); err != nil {
		return err
	}
	old, err := getPhoto(tx, p.ID)
	switch {
	case err == nil:
		if old.Log != p.Log {
			return fmt.Errorf("%w: photo %d belongs to log %d, not %d", store.ErrInvalid, p.ID, old.Log, p.Log)
		}
		for _, path := range []string{old.Path, old.ThumbPath} {
			if path != "" && path != p.Path && path != p.ThumbPath {
				w.removed.PhotoPaths = append(w.removed.PhotoPaths, path)
			}
		}
		if err := addPhotoBytes(tx, -old.Bytes()); err != nil {
			return err
		}
	case !errors.Is(err, store.ErrNotFound):
		return err
	default:
		if len(idsUnder(tx.Bucket(bucketLogPhotos), itob(p.Log))) >= store.MaxLogPhotos {
			return store.LogPhotosFull(p.Log)
		}
	}
	if err := putJSON(tx.Bucket(bucketPhotos), itob(p.ID), p); err != nil {
		return err
	}
	if err := tx.Bucket(bucketLogPhotos).Put(pairKey(p.Log, p.ID), present); err != nil {
		return err
	}
	return addPhotoBytes(tx, p.Bytes())
}

func (w *replicaWriter) DeletePhoto(id uint64) error {
	if _, err := getPhoto(w.tx, id); errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return deletePhoto(w.tx, id, w.removed)
}

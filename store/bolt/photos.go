package bolt

import (
	"bytes"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/gardend/gardend/store"
)

// keyPhotoBytes, in meta, is what the photos keep in all (store.Photo.Bytes), kept
// with every change so that a budget check costs one read.
var keyPhotoBytes = []byte("photo_bytes")

func photoBytes(tx *bbolt.Tx) uint64 {
	if v := tx.Bucket(bucketMeta).Get(keyPhotoBytes); len(v) == 8 {
		return btoi(v)
	}
	return 0
}

func addPhotoBytes(tx *bbolt.Tx, delta int64) error {
	return tx.Bucket(bucketMeta).Put(keyPhotoBytes, itob(uint64(int64(photoBytes(tx))+delta)))
}

func getPhoto(tx *bbolt.Tx, id uint64) (store.Photo, error) {
	return getRecord[store.Photo](tx, bucketPhotos, "photo", id)
}

// AddPhoto records a photo of a log of the garden (store.LogStore).
func (s *Store) AddPhoto(gardenID, logID uint64, p store.Photo, budget int64, authorize func(store.Log) error) (store.Photo, error) {
	p.ClientKey = ""
	ph, _, err := s.addPhoto(gardenID, logID, p, budget, authorize)
	return ph, err
}

// AddPhotoOnce records a photo of a log unless the log has one of that key
// (store.LogStore); a log has a few photos, read to find it.
func (s *Store) AddPhotoOnce(gardenID, logID uint64, key string, p store.Photo, budget int64, authorize func(store.Log) error) (store.Photo, bool, error) {
	if err := store.ValidClientKey(key); err != nil {
		return store.Photo{}, false, err
	}
	p.ClientKey = key
	return s.addPhoto(gardenID, logID, p, budget, authorize)
}

func (s *Store) addPhoto(gardenID, logID uint64, p store.Photo, budget int64, authorize func(store.Log) error) (store.Photo, bool, error) {
	p.Created = store.LogTime(s.now())
	p.Log, p.Garden = logID, gardenID
	if err := p.Validate(); err != nil {
		return store.Photo{}, false, err
	}
	var earlier *store.Photo
	err := s.db.Update(func(tx *bbolt.Tx) error {
		a, err := logOf(tx, gardenID, logID)
		if err != nil {
			return err
		}
		if p.ClientKey != "" {
			for _, id := range idsUnder(tx.Bucket(bucketLogPhotos), itob(logID)) {
				q, err := getPhoto(tx, id)
				if err != nil {
					return err
				}
				if q.ClientKey == p.ClientKey {
					if q.Uploader != p.Uploader {
						return store.PhotoKeyOfAnother()
					}
					earlier = &q
					return nil
				}
			}
		}
		if authorize != nil {
			l, err := logView(tx, a, nil)
			if err != nil {
				return err
			}
			if err := authorize(l); err != nil {
				return err
			}
		}
		if len(idsUnder(tx.Bucket(bucketLogPhotos), itob(logID))) >= store.MaxLogPhotos {
			return store.LogPhotosFull(logID)
		}
		if used := int64(photoBytes(tx)); budget > 0 && used+p.Bytes() > budget {
			return store.PhotoStorageFull(used, p.Bytes(), budget)
		}
		photos := tx.Bucket(bucketPhotos)
		id, err := photos.NextSequence()
		if err != nil {
			return err
		}
		p.ID = id
		if err := putJSON(photos, itob(id), p); err != nil {
			return err
		}
		if err := tx.Bucket(bucketLogPhotos).Put(pairKey(logID, id), present); err != nil {
			return err
		}
		if err := addPhotoBytes(tx, p.Bytes()); err != nil {
			return err
		}
		return recordChange(tx, s.now(), store.KindPhoto, id, logID, false)
	})
	switch {
	case err != nil:
		return store.Photo{}, false, err
	case earlier != nil:
		return *earlier, false, nil
	}
	return p, true, nil
}

// Photo returns a photo of a log of the garden.
func (s *Store) Photo(gardenID, logID, photoID uint64) (store.Photo, error) {
	var p store.Photo
	err := s.db.View(func(tx *bbolt.Tx) (err error) {
		p, err = photoOf(tx, gardenID, logID, photoID)
		return err
	})
	return p, err
}

func photoOf(tx *bbolt.Tx, gardenID, logID, photoID uint64) (store.Photo, error) {
	p, err := getPhoto(tx, photoID)
	if err != nil {
		return store.Photo{}, err
	}
	if p.Log != logID || p.Garden != gardenID {
		return store.Photo{}, fmt.Errorf("photo %d of log %d: %w", photoID, logID, store.ErrNotFound)
	}
	return p, nil
}

// PhotoByID returns a photo of any log.
func (s *Store) PhotoByID(photoID uint64) (store.Photo, error) {
	var p store.Photo
	err := s.db.View(func(tx *bbolt.Tx) (err error) {
		p, err = getPhoto(tx, photoID)
		return err
	})
	return p, err
}

// SetPhotoThumb records a thumbnail for a photo that has none.
func (s *Store) SetPhotoThumb(photoID uint64, path string, size int64) (store.Photo, error) {
	var p store.Photo
	err := s.db.Update(func(tx *bbolt.Tx) (err error) {
		if p, err = getPhoto(tx, photoID); err != nil || p.ThumbPath != "" {
			return err
		}
		p.ThumbPath, p.ThumbSize = path, size
		if err := p.Validate(); err != nil {
			return err
		}
		if err := putJSON(tx.Bucket(bucketPhotos), itob(p.ID), p); err != nil {
			return err
		}
		if err := addPhotoBytes(tx, size); err != nil {
			return err
		}
		return recordChange(tx, s.now(), store.KindPhoto, p.ID, p.Log, false)
	})
	return p, err
}

// DeletePhoto deletes a photo of a log of the garden.
func (s *Store) DeletePhoto(gardenID, logID, photoID uint64, authorize func(store.Log) error) (store.Removed, error) {
	return s.deleteInTx(func(tx *bbolt.Tx, r *store.Removed) error {
		a, err := logOf(tx, gardenID, logID)
		if err != nil {
			return err
		}
		if _, err := photoOf(tx, gardenID, logID, photoID); err != nil {
			return err
		}
		if authorize != nil {
			l, err := logView(tx, a, nil)
			if err != nil {
				return err
			}
			if err := authorize(l); err != nil {
				return err
			}
		}
		if err := deletePhoto(tx, photoID, r); err != nil {
			return err
		}
		return recordChange(tx, s.now(), store.KindPhoto, photoID, logID, true)
	})
}

func deletePhoto(tx *bbolt.Tx, photoID uint64, r *store.Removed) error {
	p, err := getPhoto(tx, photoID)
	if err != nil {
		return err
	}
	r.PhotoPaths = append(r.PhotoPaths, p.Path)
	if p.ThumbPath != "" {
		r.PhotoPaths = append(r.PhotoPaths, p.ThumbPath)
	}
	if err := tx.Bucket(bucketLogPhotos).Delete(pairKey(p.Log, p.ID)); err != nil {
		return err
	}
	if err := addPhotoBytes(tx, -p.Bytes()); err != nil {
		return err
	}
	return tx.Bucket(bucketPhotos).Delete(itob(p.ID))
}

// PhotoPaths returns every content path photos refer to.
func (s *Store) PhotoPaths() (map[string]bool, error) {
	paths := map[string]bool{}
	err := s.db.View(func(tx *bbolt.Tx) error {
		return eachUnder(tx, bucketPhotos, nil, func(p store.Photo) {
			paths[p.Path] = true
			if p.ThumbPath != "" {
				paths[p.ThumbPath] = true
			}
		})
	})
	return paths, err
}

// PhotoBytes is what the photos keep in all.
func (s *Store) PhotoBytes() (int64, error) {
	var n uint64
	err := s.db.View(func(tx *bbolt.Tx) error {
		n = photoBytes(tx)
		return nil
	})
	return int64(n), err
}

// KeepPlantIDs returns the kept id of every plant of seen, keeping new names' ids
// (store.LogStore). It reads first and writes only when a name is new, so the
// plants of a known bed cost one read transaction.
func (s *Store) KeepPlantIDs(project string, seen []store.PlantID) (map[string]string, error) {
	for i := range seen {
		seen[i].Project = project
	}
	var (
		ids map[string]string
		add []store.PlantID
	)
	plan := func(tx *bbolt.Tx) {
		ids, add = store.PlanPlantIDs(keptPlantIDs(tx, project), seen)
		if len(add) > 0 && !projectReferenced(tx, project) {
			add = nil // nothing is kept for a project no bed refers to
		}
	}
	if err := s.db.View(func(tx *bbolt.Tx) error { plan(tx); return nil }); err != nil {
		return nil, err
	}
	if len(add) == 0 {
		return ids, nil
	}
	err := s.db.Update(func(tx *bbolt.Tx) error {
		plan(tx) // again: another request may have kept some meanwhile
		for _, p := range add {
			if err := putPlantID(tx, p); err != nil {
				return err
			}
		}
		return nil
	})
	return ids, err
}

func putPlantID(tx *bbolt.Tx, p store.PlantID) error {
	if err := tx.Bucket(bucketPlantIDs).Put(cloudKey(p.Project, p.Name), []byte(p.ID)); err != nil {
		return err
	}
	return tx.Bucket(bucketPlantIDNames).Put(cloudKey(p.Project, p.ID), []byte(p.Name))
}

func keptPlantIDs(tx *bbolt.Tx, project string) map[string]string {
	out := map[string]string{}
	prefix := projectPrefix(project)
	c := tx.Bucket(bucketPlantIDs).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		out[string(k[len(prefix):])] = string(v)
	}
	return out
}

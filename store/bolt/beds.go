package bolt

import (
	"bytes"
	"fmt"
	"slices"

	bbolt "go.etcd.io/bbolt"

	"github.com/gardend/gardend/store"
)

// bedRecord is the stored form: Bed plus its garden, which Bed hides from JSON.
type bedRecord struct {
	store.Bed
	Garden uint64 `json:"garden"`
}

func (r bedRecord) bed() store.Bed {
	b := r.Bed
	b.Garden = r.Garden
	return b
}

// bedUUIDKey indexes beds by project: uuid, a 0 byte (no uuid contains one, so a scan
// of "uuid\x00" never reaches a longer uuid), the garden id.
func bedUUIDKey(uuid string, gardenID uint64) []byte {
	k := make([]byte, 0, len(uuid)+1+8)
	k = append(k, uuid...)
	k = append(k, 0)
	return append(k, itob(gardenID)...)
}

// CreateBed registers the project uuid as a bed of the garden. The same uuid twice in
// one garden is ErrConflict.
func (s *Store) CreateBed(gardenID uint64, uuid, name string) (store.Bed, error) {
	return s.CreateBedUpTo(gardenID, uuid, name, 0)
}

// CreateBedUpTo is CreateBed for a garden that may have at most maxBeds beds (0: no
// limit): one more is ErrTooManyBeds, checked in the same transaction as the insert.
// A garden that has more already keeps them.
func (s *Store) CreateBedUpTo(gardenID uint64, uuid, name string, maxBeds int) (store.Bed, error) {
	return s.CreateBedFor(0, gardenID, uuid, name, maxBeds, nil)
}

// CreateBedFor is CreateBedUpTo that lets allow refuse a project other gardens have
// beds of, seeing what userID holds on each (store.BedStore).
func (s *Store) CreateBedFor(userID, gardenID uint64, uuid, name string, maxBeds int, allow func([]store.ProjectBed) error) (store.Bed, error) {
	b := store.Bed{Garden: gardenID, UUID: uuid, Name: name}
	if err := b.Validate(); err != nil {
		return store.Bed{}, err
	}
	err := s.db.Update(func(tx *bbolt.Tx) error {
		if _, err := getGarden(tx, gardenID); err != nil {
			return err
		}
		byUUID := tx.Bucket(bucketBedUUIDs)
		if byUUID.Get(bedUUIDKey(uuid, gardenID)) != nil {
			return store.BedUUIDTaken(gardenID, uuid)
		}
		if allow != nil {
			others, err := otherProjectBeds(tx, uuid, gardenID, userID)
			if err != nil {
				return err
			}
			if len(others) > 0 {
				if err := allow(others); err != nil {
					return err
				}
			}
		}
		if maxBeds > 0 {
			if n := len(idsUnder(tx.Bucket(bucketGardenBeds), itob(gardenID))); n >= maxBeds {
				return store.TooManyBeds(gardenID, n, maxBeds)
			}
		}
		beds := tx.Bucket(bucketBeds)
		id, err := beds.NextSequence()
		if err != nil {
			return err
		}
		b.ID = id
		if err := putJSON(beds, itob(id), bedRecord{Bed: b, Garden: gardenID}); err != nil {
			return err
		}
		if err := tx.Bucket(bucketGardenBeds).Put(pairKey(gardenID, id), nil); err != nil {
			return err
		}
		if err := byUUID.Put(bedUUIDKey(uuid, gardenID), itob(id)); err != nil {
			return err
		}
		return recordChange(tx, s.now(), store.KindBed, id, gardenID, false)
	})
	if err != nil {
		return store.Bed{}, err
	}
	return b, nil
}

// otherProjectBeds are the beds of the project outside gardenID, with what userID
// holds on their gardens.
func otherProjectBeds(tx *bbolt.Tx, uuid string, gardenID, userID uint64) ([]store.ProjectBed, error) {
	beds, err := projectBeds(tx, uuid)
	if err != nil {
		return nil, err
	}
	var out []store.ProjectBed
	for _, b := range beds {
		if b.Garden == gardenID {
			continue
		}
		g, err := getGarden(tx, b.Garden)
		if err != nil {
			return nil, err
		}
		a, err := gardenAccess(tx, g, userID)
		if err != nil {
			return nil, err
		}
		out = append(out, store.ProjectBed{Bed: b, Company: g.Company, Access: a})
	}
	return out, nil
}

// projectBeds reads the beds of a project through the index by uuid.
func projectBeds(tx *bbolt.Tx, uuid string) ([]store.Bed, error) {
	prefix := append([]byte(uuid), 0)
	var ids []uint64
	c := tx.Bucket(bucketBedUUIDs).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		ids = append(ids, btoi(v))
	}
	slices.Sort(ids)
	recs, err := getEach[bedRecord](tx, bucketBeds, "bed", ids)
	if err != nil {
		return nil, err
	}
	beds := make([]store.Bed, len(recs))
	for i, rec := range recs {
		beds[i] = rec.bed()
	}
	return beds, nil
}

// BedsOfProject returns the beds registered for the project, in every garden, by
// ascending id.
func (s *Store) BedsOfProject(uuid string) ([]store.Bed, error) {
	out := []store.Bed{}
	if !store.ValidUUID(uuid) {
		return out, nil // no bed has it: every bed's uuid is valid
	}
	err := s.db.View(func(tx *bbolt.Tx) error {
		beds, err := projectBeds(tx, uuid)
		if len(beds) > 0 {
			out = beds
		}
		return err
	})
	return out, err
}

func getBed(tx *bbolt.Tx, id uint64) (store.Bed, error) {
	rec, err := getRecord[bedRecord](tx, bucketBeds, "bed", id)
	if err != nil {
		return store.Bed{}, err
	}
	return rec.bed(), nil
}

// bedOf loads a bed addressed under a garden: a bed of another garden is ErrNotFound.
func bedOf(tx *bbolt.Tx, gardenID, bedID uint64) (store.Bed, error) {
	b, err := getBed(tx, bedID)
	if err != nil {
		return store.Bed{}, err
	}
	if b.Garden != gardenID {
		return store.Bed{}, fmt.Errorf("bed %d of garden %d: %w", bedID, gardenID, store.ErrNotFound)
	}
	return b, nil
}

// Bed returns a bed of the garden.
func (s *Store) Bed(gardenID, bedID uint64) (store.Bed, error) {
	var b store.Bed
	err := s.db.View(func(tx *bbolt.Tx) (err error) {
		b, err = bedOf(tx, gardenID, bedID)
		return err
	})
	return b, err
}

// BedsOfGarden returns the garden's beds by ascending id.
func (s *Store) BedsOfGarden(gardenID uint64) ([]store.Bed, error) {
	var out []store.Bed
	err := s.db.View(func(tx *bbolt.Tx) error {
		if _, err := getGarden(tx, gardenID); err != nil {
			return err
		}
		recs, err := getEach[bedRecord](tx, bucketBeds, "bed", idsUnder(tx.Bucket(bucketGardenBeds), itob(gardenID)))
		out = make([]store.Bed, len(recs))
		for i, rec := range recs {
			out[i] = rec.bed()
		}
		return err
	})
	return out, err
}

// DeleteBed removes a bed of the garden. Removed.BedUUIDs holds its uuid when no other
// bed refers to that project any more.
func (s *Store) DeleteBed(gardenID, bedID uint64) (store.Removed, error) {
	return s.deleteInTx(func(tx *bbolt.Tx, r *store.Removed) error {
		b, err := bedOf(tx, gardenID, bedID)
		if err != nil {
			return err
		}
		if err := deleteBed(tx, b, r); err != nil {
			return err
		}
		return recordChange(tx, s.now(), store.KindBed, b.ID, b.Garden, true)
	})
}

func deleteBed(tx *bbolt.Tx, b store.Bed, r *store.Removed) error {
	if err := tx.Bucket(bucketBedUUIDs).Delete(bedUUIDKey(b.UUID, b.Garden)); err != nil {
		return err
	}
	if err := tx.Bucket(bucketGardenBeds).Delete(pairKey(b.Garden, b.ID)); err != nil {
		return err
	}
	r.BedUUIDs = append(r.BedUUIDs, b.UUID)
	if err := tx.Bucket(bucketBedValues).Delete(itob(b.ID)); err != nil {
		return err
	}
	if err := deleteBedHistory(tx, b.ID); err != nil {
		return err
	}
	return tx.Bucket(bucketBeds).Delete(itob(b.ID))
}

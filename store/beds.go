package store

import (
	"fmt"
	"regexp"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"
)

// Bed is a bed of a garden: a project on the spatial data server, named by its uuid.
// Garden is not part of the API's bed object; the stored record keeps it.
type Bed struct {
	ID     uint64 `json:"id"`
	Garden uint64 `json:"-"`
	UUID   string `json:"uuid"`
	Name   string `json:"name"`
}

// bedRecord is the stored form: Bed plus its garden, which Bed hides from JSON.
type bedRecord struct {
	Bed
	Garden uint64 `json:"garden"`
}

func (r bedRecord) bed() Bed {
	b := r.Bed
	b.Garden = r.Garden
	return b
}

// maxUUIDLen bounds a project uuid; a standard uuid has 36 characters.
const maxUUIDLen = 64

var uuidPattern = regexp.MustCompile(`^[0-9A-Za-z-]+$`)

// Validate checks the uuid (1–64 letters, digits and '-') and the optional name.
func (b Bed) Validate() error {
	v := &ValidationError{}
	switch {
	case b.UUID == "":
		v.Add("uuid", "uuid is required: the uuid of the bed's project on the spatial data server")
	case len(b.UUID) > maxUUIDLen || !uuidPattern.MatchString(b.UUID):
		v.Add("uuid", fmt.Sprintf("uuid must be a spatial data server (SEEREP) project uuid: at most %d letters, digits and '-', like 3fa85f64-5717-4562-b3fc-2c963f66afa6", maxUUIDLen))
	}
	if utf8.RuneCountInString(b.Name) > maxNameLen {
		v.Add("name", fmt.Sprintf("name must be at most %d characters", maxNameLen))
	}
	return v.OrNil()
}

// bedUUIDKey indexes beds by project: uuid, a 0 byte (no uuid contains one, so a scan
// of "uuid\x00" never reaches a longer uuid), the garden id.
func bedUUIDKey(uuid string, gardenID uint64) []byte {
	k := make([]byte, 0, len(uuid)+1+8)
	k = append(k, uuid...)
	k = append(k, 0)
	return append(k, itob(gardenID)...)
}

// ErrTooManyBeds: the garden already has the most beds CreateBedUpTo allows. It is
// ErrInvalid under errors.Is.
var ErrTooManyBeds = fmt.Errorf("%w: the garden has as many beds as it may have", ErrInvalid)

// CreateBed registers the project uuid as a bed of the garden. The same uuid twice in
// one garden is ErrConflict.
func (s *Store) CreateBed(gardenID uint64, uuid, name string) (Bed, error) {
	return s.CreateBedUpTo(gardenID, uuid, name, 0)
}

// CreateBedUpTo is CreateBed for a garden that may have at most maxBeds beds (0: no
// limit): one more is ErrTooManyBeds, checked in the same transaction as the insert.
// A garden that has more already keeps them.
func (s *Store) CreateBedUpTo(gardenID uint64, uuid, name string, maxBeds int) (Bed, error) {
	b := Bed{Garden: gardenID, UUID: uuid, Name: name}
	if err := b.Validate(); err != nil {
		return Bed{}, err
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		if _, err := getGarden(tx, gardenID); err != nil {
			return err
		}
		byUUID := tx.Bucket(bucketBedUUIDs)
		if byUUID.Get(bedUUIDKey(uuid, gardenID)) != nil {
			return fmt.Errorf("%w: garden %d already has a bed with uuid %s", ErrConflict, gardenID, uuid)
		}
		if maxBeds > 0 {
			if n := len(idsUnder(tx.Bucket(bucketGardenBeds), itob(gardenID))); n >= maxBeds {
				return fmt.Errorf("%w (garden %d has %d, at most %d)", ErrTooManyBeds, gardenID, n, maxBeds)
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
		return byUUID.Put(bedUUIDKey(uuid, gardenID), itob(id))
	})
	if err != nil {
		return Bed{}, err
	}
	return b, nil
}

func getBed(tx *bolt.Tx, id uint64) (Bed, error) {
	rec, err := getRecord[bedRecord](tx, bucketBeds, "bed", id)
	if err != nil {
		return Bed{}, err
	}
	return rec.bed(), nil
}

// bedOf loads a bed addressed under a garden: a bed of another garden is ErrNotFound.
func bedOf(tx *bolt.Tx, gardenID, bedID uint64) (Bed, error) {
	b, err := getBed(tx, bedID)
	if err != nil {
		return Bed{}, err
	}
	if b.Garden != gardenID {
		return Bed{}, fmt.Errorf("bed %d of garden %d: %w", bedID, gardenID, ErrNotFound)
	}
	return b, nil
}

// Bed returns a bed of the garden.
func (s *Store) Bed(gardenID, bedID uint64) (Bed, error) {
	var b Bed
	err := s.db.View(func(tx *bolt.Tx) (err error) {
		b, err = bedOf(tx, gardenID, bedID)
		return err
	})
	return b, err
}

// BedsOfGarden returns the garden's beds by ascending id.
func (s *Store) BedsOfGarden(gardenID uint64) ([]Bed, error) {
	var out []Bed
	err := s.db.View(func(tx *bolt.Tx) error {
		if _, err := getGarden(tx, gardenID); err != nil {
			return err
		}
		var err error
		out, err = getEach(tx, getBed, idsUnder(tx.Bucket(bucketGardenBeds), itob(gardenID)))
		return err
	})
	return out, err
}

// DeleteBed removes a bed of the garden. Removed.BedUUIDs holds its uuid when no other
// bed refers to that project any more.
func (s *Store) DeleteBed(gardenID, bedID uint64) (Removed, error) {
	return s.deleteInTx(func(tx *bolt.Tx, r *Removed) error {
		b, err := bedOf(tx, gardenID, bedID)
		if err != nil {
			return err
		}
		return deleteBed(tx, b, r)
	})
}

func deleteBed(tx *bolt.Tx, b Bed, r *Removed) error {
	if err := tx.Bucket(bucketBedUUIDs).Delete(bedUUIDKey(b.UUID, b.Garden)); err != nil {
		return err
	}
	if err := tx.Bucket(bucketGardenBeds).Delete(pairKey(b.Garden, b.ID)); err != nil {
		return err
	}
	r.BedUUIDs = append(r.BedUUIDs, b.UUID)
	return tx.Bucket(bucketBeds).Delete(itob(b.ID))
}

package bolt

import (
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/gardend/gardend/store"
)

// SetGardenImage points the garden at a new image file and replaces its whole
// coordinate set, in one transaction, and returns the previous image path ("" when
// there was none). The caller has already written the file, and deletes the old one
// once this returns: a record never points at a missing file.
func (s *Store) SetGardenImage(gardenID uint64, path string, cs store.Coordinates) (old string, err error) {
	if err := store.ValidateImageRecord(path, cs); err != nil {
		return "", err
	}
	err = s.db.Update(func(tx *bbolt.Tx) error {
		g, err := getGarden(tx, gardenID)
		if err != nil {
			return err
		}
		old = ""
		if g.ImagePath != nil {
			old = *g.ImagePath
		}
		g.ImagePath = &path
		if err := putJSON(tx.Bucket(bucketGardens), itob(g.ID), g); err != nil {
			return err
		}
		if err := putJSON(tx.Bucket(bucketGardenCoords), itob(g.ID), cs); err != nil {
			return err
		}
		return recordChange(tx, s.now(), store.KindGardenImage, g.ID, g.Company, false)
	})
	if err != nil {
		return "", err
	}
	return old, nil
}

// GardenImage returns the garden's image path and coordinates, read together so they
// always belong to the same upload. A garden without image is ErrNotFound.
func (s *Store) GardenImage(gardenID uint64) (path string, cs store.Coordinates, err error) {
	err = s.db.View(func(tx *bbolt.Tx) error {
		g, err := getGarden(tx, gardenID)
		if err != nil {
			return err
		}
		if g.ImagePath == nil {
			return store.NoImage(gardenID)
		}
		path = *g.ImagePath
		// An image without coordinates is a damaged record, not a missing image:
		// %v keeps it from reading as ErrNotFound.
		if err := getJSON(tx.Bucket(bucketGardenCoords), itob(gardenID), &cs); err != nil {
			return fmt.Errorf("coordinates of garden %d: %v", gardenID, err)
		}
		return nil
	})
	return path, cs, err
}

// ImagePaths returns the set of image paths gardens refer to, for the start-up sweep of
// files nobody refers to.
func (s *Store) ImagePaths() (map[string]bool, error) {
	paths := map[string]bool{}
	err := s.db.View(func(tx *bbolt.Tx) error {
		return eachUnder(tx, bucketGardens, nil, func(g store.Garden) {
			if g.ImagePath != nil {
				paths[*g.ImagePath] = true
			}
		})
	})
	return paths, err
}

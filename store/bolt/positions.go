package bolt

import (
	"bytes"

	bbolt "go.etcd.io/bbolt"

	"github.com/gardend/gardend/store"
)

// cloudKey is project|0|cloud; neither contains a 0 byte, so "project\x00" prefixes
// exactly that project's entries.
func cloudKey(project, cloud string) []byte {
	k := make([]byte, 0, len(project)+1+len(cloud))
	k = append(k, project...)
	k = append(k, 0)
	return append(k, cloud...)
}

func projectPrefix(project string) []byte { return append([]byte(project), 0) }

// CloudState reads a project's positions and queued downloads in one transaction.
func (s *Store) CloudState(project string) (store.CloudState, error) {
	st := store.CloudState{Positions: map[string]store.PlantPosition{}, Jobs: map[string]store.CloudJob{}}
	err := s.db.View(func(tx *bbolt.Tx) error {
		prefix := projectPrefix(project)
		if err := eachUnder(tx, bucketPositions, prefix, func(p store.PlantPosition) { st.Positions[p.Cloud] = p }); err != nil {
			return err
		}
		return eachUnder(tx, bucketCloudJobs, prefix, func(j store.CloudJob) { st.Jobs[j.Cloud] = j })
	})
	return st, err
}

// projectReferenced reports whether some bed refers to the project.
func projectReferenced(tx *bbolt.Tx, project string) bool {
	return anyUnder(tx.Bucket(bucketBedUUIDs), projectPrefix(project))
}

// dropProjectClouds deletes the positions, queued downloads and plant identities of a
// project.
func dropProjectClouds(tx *bbolt.Tx, project string) error {
	prefix := projectPrefix(project)
	for _, name := range [][]byte{bucketPositions, bucketCloudJobs, bucketPlantIDs, bucketPlantIDNames} {
		b := tx.Bucket(name)
		var keys [][]byte
		c := b.Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			keys = append(keys, bytes.Clone(k))
		}
		for _, k := range keys {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
	}
	return nil
}

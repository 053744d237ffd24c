package store

import (
	"sort"

	bolt "go.etcd.io/bbolt"
)

// Stats summarises the database for `gardend inspect stats`.
type Stats struct {
	SchemaVersion uint64        `json:"schema_version"`
	FileBytes     int64         `json:"file_bytes"`
	Buckets       []BucketStats `json:"buckets"`
}

// BucketStats counts the keys of one bucket.
type BucketStats struct {
	Name string `json:"name"`
	Keys int    `json:"keys"`
}

// Stats counts keys per bucket in one read transaction.
func (s *Store) Stats() (Stats, error) {
	var st Stats
	err := s.db.View(func(tx *bolt.Tx) error {
		st.FileBytes = tx.Size()
		if v := tx.Bucket(bucketMeta).Get(keySchemaVersion); v != nil {
			st.SchemaVersion = btoi(v)
		}
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			st.Buckets = append(st.Buckets, BucketStats{Name: string(name), Keys: b.Stats().KeyN})
			return nil
		})
	})
	sort.Slice(st.Buckets, func(i, j int) bool { return st.Buckets[i].Name < st.Buckets[j].Name })
	return st, err
}

package bolt

import (
	"sort"

	bbolt "go.etcd.io/bbolt"

	"github.com/gardend/gardend/store"
)

// Stats counts keys per bucket in one read transaction.
func (s *Store) Stats() (store.Stats, error) {
	var st store.Stats
	err := s.db.View(func(tx *bbolt.Tx) error {
		st.FileBytes = tx.Size()
		if v := tx.Bucket(bucketMeta).Get(keySchemaVersion); v != nil {
			st.SchemaVersion = btoi(v)
		}
		return tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
			st.Buckets = append(st.Buckets, store.BucketStats{Name: string(name), Keys: b.Stats().KeyN})
			return nil
		})
	})
	sort.Slice(st.Buckets, func(i, j int) bool { return st.Buckets[i].Name < st.Buckets[j].Name })
	return st, err
}

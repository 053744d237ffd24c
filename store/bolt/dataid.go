package bolt

import (
	"crypto/rand"
	"encoding/hex"

	bbolt "go.etcd.io/bbolt"
)

var keyDataID = []byte("data_id")

// DataID returns the database's identity: a random id made the first time it is
// asked for (created reports that this call made it) and kept for good, backups
// included. The server writes it beside the files it keeps so that its start-up
// sweeps never delete files that belong to another database.
func (s *Store) DataID() (id string, created bool, err error) {
	err = s.db.View(func(tx *bbolt.Tx) error {
		id = string(tx.Bucket(bucketMeta).Get(keyDataID))
		return nil
	})
	if err != nil || id != "" {
		return id, false, err
	}
	err = s.db.Update(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if v := meta.Get(keyDataID); v != nil {
			id = string(v) // made meanwhile by another caller
			return nil
		}
		var b [16]byte
		rand.Read(b[:])
		id, created = hex.EncodeToString(b[:]), true
		return meta.Put(keyDataID, []byte(id))
	})
	return id, created, err
}

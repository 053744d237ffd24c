// Package bolttest edits a closed bbolt file of gardend behind the store's back, for
// tests that need records as an older version (or damage) could have left them. It
// keeps the bbolt import inside the bbolt backend's tree.
package bolttest

import (
	"encoding/json"
	"fmt"

	bbolt "go.etcd.io/bbolt"
)

// EditRecord replaces the value at key in bucket of the file at path by edit's result.
func EditRecord(path, bucket string, key []byte, edit func(old []byte) ([]byte, error)) error {
	return update(path, func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bucket))
		if b == nil {
			return fmt.Errorf("no bucket %q", bucket)
		}
		v, err := edit(b.Get(key))
		if err != nil {
			return err
		}
		return b.Put(key, v)
	})
}

// SetFirstRecordFields sets JSON fields of the first record of each bucket named in
// fields; each field must already exist in that record.
func SetFirstRecordFields(path string, fields map[string]map[string]string) error {
	return update(path, func(tx *bbolt.Tx) error {
		for bucket, set := range fields {
			b := tx.Bucket([]byte(bucket))
			if b == nil {
				return fmt.Errorf("no bucket %q", bucket)
			}
			k, v := b.Cursor().First()
			var rec map[string]any
			if err := json.Unmarshal(v, &rec); err != nil {
				return fmt.Errorf("%s: %w", bucket, err)
			}
			for f, val := range set {
				if _, ok := rec[f]; !ok {
					return fmt.Errorf("%s records have no field %q: %s", bucket, f, v)
				}
				rec[f] = val
			}
			data, err := json.Marshal(rec)
			if err != nil {
				return err
			}
			if err := b.Put(k, data); err != nil {
				return err
			}
		}
		return nil
	})
}

func update(path string, fn func(tx *bbolt.Tx) error) (err error) {
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := db.Close(); err == nil {
			err = cerr
		}
	}()
	return db.Update(fn)
}

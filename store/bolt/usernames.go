package bolt

import (
	"bytes"

	bbolt "go.etcd.io/bbolt"

	"github.com/gardend/gardend/store"
)

// skeletonKey is the index entry of a user: skeleton|0|id.
func skeletonKey(username string, id uint64) []byte {
	return append(append([]byte(store.UsernameSkeleton(username)), 0), itob(id)...)
}

func skeletonPrefix(username string) []byte {
	return append([]byte(store.UsernameSkeleton(username)), 0)
}

// claimUsername checks that name (normalised) is free for account id (0: a new one):
// no account has it, nor a name that looks the same. It returns ErrConflict naming
// which.
func claimUsername(tx *bbolt.Tx, name string, id uint64) error {
	if other, ok := userIDByName(tx, name); ok && other != id {
		return store.UsernameTaken(name)
	}
	c := tx.Bucket(bucketUsernameLooks).Cursor()
	prefix := skeletonPrefix(name)
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if len(k) == len(prefix)+8 && btoi(k[len(prefix):]) != id {
			return store.UsernameLooksTaken(name)
		}
	}
	return nil
}

// CheckUsernameFree is claimUsername on its own, for a caller that wants to refuse a
// taken name before it spends a hash; the write that takes the name checks again.
func (s *Store) CheckUsernameFree(name string, id uint64) error {
	return s.db.View(func(tx *bbolt.Tx) error { return claimUsername(tx, store.NormalizeUsername(name), id) })
}

// putUsername indexes name as account id's, under its name and its skeleton.
func putUsername(tx *bbolt.Tx, name string, id uint64) error {
	if err := tx.Bucket(bucketUsernames).Put([]byte(name), itob(id)); err != nil {
		return err
	}
	return tx.Bucket(bucketUsernameLooks).Put(skeletonKey(name, id), nil)
}

func deleteUsername(tx *bbolt.Tx, name string, id uint64) error {
	if err := tx.Bucket(bucketUsernames).Delete([]byte(name)); err != nil {
		return err
	}
	return tx.Bucket(bucketUsernameLooks).Delete(skeletonKey(name, id))
}

// userIDByName finds the account a username means: the one of that exact name; else
// the one of its normalised form; else the one account stored before names were
// normalised whose name normalises the same (its owner may now type it plainly).
func userIDByName(tx *bbolt.Tx, username string) (uint64, bool) {
	names := tx.Bucket(bucketUsernames)
	if v := names.Get([]byte(username)); v != nil {
		return btoi(v), true
	}
	normal := store.NormalizeUsername(username)
	if normal != username {
		if v := names.Get([]byte(normal)); v != nil {
			return btoi(v), true
		}
	}
	var found uint64
	n := 0
	c := tx.Bucket(bucketUsernameLooks).Cursor()
	prefix := skeletonPrefix(normal)
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if len(k) != len(prefix)+8 {
			continue
		}
		id := btoi(k[len(prefix):])
		if rec, err := getRecord[userRecord](tx, bucketUsers, "user", id); err == nil && store.NormalizeUsername(rec.Username) == normal {
			found, n = id, n+1
		}
	}
	return found, n == 1
}

// indexUsernameLooks builds the skeleton index of every account (schema 1 → 2).
func indexUsernameLooks(tx *bbolt.Tx) error {
	looks := tx.Bucket(bucketUsernameLooks)
	return tx.Bucket(bucketUsernames).ForEach(func(k, v []byte) error {
		return looks.Put(skeletonKey(string(k), btoi(v)), nil)
	})
}

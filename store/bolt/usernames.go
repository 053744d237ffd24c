package bolt

import (
	"bytes"

	bbolt "go.etcd.io/bbolt"

	"github.com/gardend/gardend/store"
)

// lookKeys are the index entries of a user, one per look (store.UsernameLooks):
// look|0|id.
func lookKeys(username string, id uint64) [][]byte {
	var out [][]byte
	for _, look := range store.UsernameLooks(username) {
		out = append(out, append(append([]byte(look), 0), itob(id)...))
	}
	return out
}

// lookAccounts calls fn with the id of every account indexed under look.
func lookAccounts(tx *bbolt.Tx, look string, fn func(id uint64) bool) {
	c := tx.Bucket(bucketUsernameLooks).Cursor()
	prefix := append([]byte(look), 0)
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if len(k) == len(prefix)+8 && !fn(btoi(k[len(prefix):])) {
			return
		}
	}
}

// claimUsername checks that name (normalised) is free for account id (0: a new one):
// no account has it, nor a name that looks like it (shares a look). It returns
// ErrConflict naming which. Run in the write transaction that takes the name, it is
// atomic with it: bbolt has one writer at a time.
func claimUsername(tx *bbolt.Tx, name string, id uint64) error {
	if other, ok := userIDByName(tx, name); ok && other != id {
		return store.UsernameTaken(name)
	}
	taken := false
	for _, look := range store.UsernameLooks(name) {
		lookAccounts(tx, look, func(other uint64) bool {
			taken = other != id
			return !taken
		})
		if taken {
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
	looks := tx.Bucket(bucketUsernameLooks)
	for _, k := range lookKeys(name, id) {
		if err := looks.Put(k, nil); err != nil {
			return err
		}
	}
	return nil
}

func deleteUsername(tx *bbolt.Tx, name string, id uint64) error {
	if err := tx.Bucket(bucketUsernames).Delete([]byte(name)); err != nil {
		return err
	}
	looks := tx.Bucket(bucketUsernameLooks)
	for _, k := range lookKeys(name, id) {
		if err := looks.Delete(k); err != nil {
			return err
		}
	}
	return nil
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
	// A name that normalises the same has the same looks: the first one finds it.
	var found uint64
	n := 0
	lookAccounts(tx, store.UsernameLooks(normal)[0], func(id uint64) bool {
		if rec, err := getRecord[userRecord](tx, bucketUsers, "user", id); err == nil && store.NormalizeUsername(rec.Username) == normal {
			found, n = id, n+1
		}
		return true
	})
	return found, n == 1
}

// indexUsernameLooks builds the look index of every account (schema 1 → 2).
func indexUsernameLooks(tx *bbolt.Tx) error {
	looks := tx.Bucket(bucketUsernameLooks)
	return tx.Bucket(bucketUsernames).ForEach(func(k, v []byte) error {
		for _, key := range lookKeys(string(k), btoi(v)) {
			if err := looks.Put(key, nil); err != nil {
				return err
			}
		}
		return nil
	})
}

// reindexUsernameLooks rebuilds the look index with Unicode's confusables
// (store.ConfusablesVersion) in place of the hand-written table of schema 2, and
// case-folded (schema 2 → 3). Accounts that now look alike all stay: only new names
// are held to the rule.
func reindexUsernameLooks(tx *bbolt.Tx) error {
	if err := tx.DeleteBucket(bucketUsernameLooks); err != nil {
		return err
	}
	if _, err := tx.CreateBucket(bucketUsernameLooks); err != nil {
		return err
	}
	return indexUsernameLooks(tx)
}

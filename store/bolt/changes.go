package bolt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/gardend/gardend/store"
)

// The change feed (store.ChangeFeed): bucketChanges holds seq → Change, its own
// sequence numbering them, and the meta key keyChangeFeed is present while it is on.

var keyChangeFeed = []byte("change_feed")

var _ store.ChangeFeed = (*Store)(nil)

// recordChange appends a change of a record homed here, when the feed is on. Every
// write method that changes a replicated record calls it in its transaction.
func recordChange(tx *bbolt.Tx, now time.Time, kind string, id, ref uint64, deleted bool) error {
	if !store.IsLocal(id) || tx.Bucket(bucketMeta).Get(keyChangeFeed) == nil {
		return nil
	}
	return appendChange(tx, store.Change{Kind: kind, ID: id, Ref: ref, Deleted: deleted, At: now.UTC()})
}

func appendChange(tx *bbolt.Tx, c store.Change) error {
	b := tx.Bucket(bucketChanges)
	seq, err := b.NextSequence()
	if err != nil {
		return err
	}
	c.Seq = seq
	return putJSON(b, itob(seq), c)
}

// StartChangeFeed turns the feed on; the first time, the same transaction appends a
// change for every record homed here.
func (s *Store) StartChangeFeed() (started bool, err error) {
	err = s.db.Update(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta.Get(keyChangeFeed) != nil {
			return nil
		}
		started = true
		if err := meta.Put(keyChangeFeed, []byte{1}); err != nil {
			return err
		}
		now := s.now().UTC()
		for _, kind := range store.SnapshotKinds {
			if err := snapshotKind(tx, kind, func(id, ref uint64) error {
				if !store.IsLocal(id) {
					return nil
				}
				return appendChange(tx, store.Change{Kind: kind, ID: id, Ref: ref, At: now})
			}); err != nil {
				return err
			}
		}
		return nil
	})
	return started, err
}

// snapshotKind calls fn with the keys of every record of kind, in key order.
func snapshotKind(tx *bbolt.Tx, kind string, fn func(id, ref uint64) error) error {
	keys := func(bucket []byte, each func(k, v []byte) error) error {
		return tx.Bucket(bucket).ForEach(each)
	}
	switch kind {
	case store.KindUser:
		return keys(bucketUsers, func(k, _ []byte) error { return fn(btoi(k), 0) })
	case store.KindCompany:
		return keys(bucketCompanies, func(k, _ []byte) error { return fn(btoi(k), 0) })
	case store.KindGarden, store.KindGardenImage:
		return keys(bucketGardens, func(k, v []byte) error {
			var g store.Garden
			if err := json.Unmarshal(v, &g); err != nil {
				return fmt.Errorf("decode garden %d: %w", btoi(k), err)
			}
			if kind == store.KindGardenImage && g.ImagePath == nil {
				return nil
			}
			return fn(g.ID, g.Company)
		})
	case store.KindBed:
		return keys(bucketBeds, func(k, v []byte) error {
			var r bedRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("decode bed %d: %w", btoi(k), err)
			}
			return fn(r.ID, r.Garden)
		})
	case store.KindCompanyPermission:
		return keys(bucketPermCompany, func(k, _ []byte) error { return fn(btoi(k[:8]), btoi(k[8:])) })
	case store.KindGardenPermission:
		return keys(bucketPermGarden, func(k, _ []byte) error { return fn(btoi(k[:8]), btoi(k[8:])) })
	case store.KindBedValues:
		return keys(bucketBedValues, func(k, v []byte) error {
			var bv store.BedValues
			if err := json.Unmarshal(v, &bv); err != nil {
				return fmt.Errorf("decode values of bed %d: %w", btoi(k), err)
			}
			return fn(bv.Bed, bv.Garden)
		})
	case store.KindLog:
		return keys(bucketLogs, func(k, v []byte) error {
			var a store.ArchivedLog
			if err := json.Unmarshal(v, &a); err != nil {
				return fmt.Errorf("decode log %d: %w", btoi(k), err)
			}
			return fn(a.ID, a.Garden)
		})
	case store.KindPhoto:
		return keys(bucketPhotos, func(k, v []byte) error {
			var p store.Photo
			if err := json.Unmarshal(v, &p); err != nil {
				return fmt.Errorf("decode photo %d: %w", btoi(k), err)
			}
			return fn(p.ID, p.Log)
		})
	case store.KindHistory:
		return snapshotHistory(tx, fn)
	case store.KindAlert:
		return keys(bucketAlerts, func(k, v []byte) error {
			var r alertRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("decode alert %d: %w", btoi(k), err)
			}
			return fn(r.ID, r.Garden)
		})
	case store.KindGuidance:
		return keys(bucketGuidance, func(k, _ []byte) error {
			g, err := getGarden(tx, btoi(k))
			if err != nil {
				return err
			}
			return fn(g.ID, g.Company)
		})
	}
	return fmt.Errorf("snapshot: unknown kind %q", kind)
}

// ChangesAfter returns up to limit changes above after, in order.
func (s *Store) ChangesAfter(after uint64, limit int) ([]store.Change, error) {
	var out []store.Change
	err := s.db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketChanges).Cursor()
		for k, v := c.Seek(itob(after + 1)); k != nil && len(out) < limit; k, v = c.Next() {
			var ch store.Change
			if err := json.Unmarshal(v, &ch); err != nil {
				return fmt.Errorf("decode change %d: %w", btoi(k), err)
			}
			out = append(out, ch)
		}
		return nil
	})
	return out, err
}

// TrimChanges deletes the changes up to and including seq.
func (s *Store) TrimChanges(seq uint64) (int, error) {
	n := 0
	err := s.db.Update(func(tx *bbolt.Tx) error {
		n = 0
		b := tx.Bucket(bucketChanges)
		// The keys first, then the deletions: taking the first key again after each
		// deletion walks every page emptied so far (quadratic in a week's backlog),
		// and a cursor that deletes as it goes skips keys.
		var keys [][]byte
		c := b.Cursor()
		for k, _ := c.First(); k != nil && btoi(k) <= seq; k, _ = c.Next() {
			keys = append(keys, bytes.Clone(k))
		}
		for _, k := range keys {
			if err := b.Delete(k); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

// changeKey names the record a change is about.
type changeKey struct {
	kind    string
	id, ref uint64
}

// CompactChanges deletes every change above after that repeats an earlier one above
// after.
func (s *Store) CompactChanges(after uint64) (int, error) {
	n := 0
	err := s.db.Update(func(tx *bbolt.Tx) error {
		n = 0
		seen := map[changeKey]bool{}
		var dup [][]byte
		c := tx.Bucket(bucketChanges).Cursor()
		for k, v := c.Seek(itob(after + 1)); k != nil; k, v = c.Next() {
			var ch store.Change
			if err := json.Unmarshal(v, &ch); err != nil {
				return fmt.Errorf("decode change %d: %w", btoi(k), err)
			}
			key := changeKey{ch.Kind, ch.ID, ch.Ref}
			if seen[key] {
				dup = append(dup, bytes.Clone(k))
			}
			seen[key] = true
		}
		b := tx.Bucket(bucketChanges)
		for _, k := range dup {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		n = len(dup)
		return nil
	})
	return n, err
}

// ChangeStats describes the feed.
func (s *Store) ChangeStats() (store.ChangeStats, error) {
	var st store.ChangeStats
	err := s.db.View(func(tx *bbolt.Tx) error {
		st.On = tx.Bucket(bucketMeta).Get(keyChangeFeed) != nil
		b := tx.Bucket(bucketChanges)
		st.LastSeq = b.Sequence()
		c := b.Cursor()
		k, v := c.First()
		if k == nil {
			return nil
		}
		var first store.Change
		if err := json.Unmarshal(v, &first); err != nil {
			return fmt.Errorf("decode change %d: %w", btoi(k), err)
		}
		st.Oldest = first.At
		for ; k != nil; k, _ = c.Next() {
			st.Records++
		}
		return nil
	})
	return st, err
}

package bolt

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	bbolt "go.etcd.io/bbolt"

	"github.com/gardend/gardend/store"
)

// What history, alerts and guidance replicate (store/historysync.go).

// HistorySpan returns a bed's series with points in the span
// (store.HistoryReplication).
func (s *Store) HistorySpan(bedID uint64, day uint32, slot uint8) (store.HistorySpan, error) {
	var out store.HistorySpan
	err := s.db.View(func(tx *bbolt.Tx) error {
		b, err := getBed(tx, bedID)
		if err != nil {
			return err
		}
		out = store.HistorySpan{Bed: b.ID, Garden: b.Garden, Day: day, Slot: slot}
		points := tx.Bucket(bucketHistoryPoints)
		prefix := itob(bedID)
		c := tx.Bucket(bucketHistorySeries).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var rec seriesRecord
			if err := json.Unmarshal(v, &rec); err != nil {
				return fmt.Errorf("decode series of bed %d: %w", bedID, err)
			}
			chunk := points.Get(chunkKey(rec.ID, day))
			if chunk == nil {
				continue
			}
			pts, err := store.SpanPoints(day, slot, chunk)
			if err != nil {
				return fmt.Errorf("series %d: %w", rec.ID, err)
			}
			if len(pts) == 0 {
				continue
			}
			out.Series = append(out.Series, store.SeriesSpan{Plant: string(k[8:]), Species: rec.Species, Name: rec.Name,
				Points: bytes.Clone(pts)})
		}
		return nil
	})
	return out, err
}

// snapshotHistory calls fn with (bed, whole-day span) for every day a bed has
// points, by bed and day.
func snapshotHistory(tx *bbolt.Tx, fn func(id, ref uint64) error) error {
	bedOfSeries := map[uint64]uint64{}
	if err := tx.Bucket(bucketHistorySeries).ForEach(func(k, v []byte) error {
		var rec seriesRecord
		if err := json.Unmarshal(v, &rec); err != nil {
			return fmt.Errorf("decode series of bed %d: %w", btoi(k[:8]), err)
		}
		bedOfSeries[rec.ID] = btoi(k[:8])
		return nil
	}); err != nil {
		return err
	}
	spans := map[[2]uint64]bool{}
	if err := tx.Bucket(bucketHistoryPoints).ForEach(func(k, _ []byte) error {
		if bed, ok := bedOfSeries[btoi(k[:8])]; ok {
			spans[[2]uint64{bed, store.HistorySpanRef(binary.BigEndian.Uint32(k[8:]), store.WholeDay)}] = true
		}
		return nil
	}); err != nil {
		return err
	}
	keys := make([][2]uint64, 0, len(spans))
	for k := range spans {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]uint64) int {
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		return cmp.Compare(a[1], b[1])
	})
	for _, k := range keys {
		if err := fn(k[0], k[1]); err != nil {
			return err
		}
	}
	return nil
}

func (w *replicaWriter) PutHistorySpan(sp store.HistorySpan) error {
	if err := sp.Validate(); err != nil {
		return err
	}
	tx := w.tx
	if _, err := bedOf(tx, sp.Garden, sp.Bed); err != nil {
		return err
	}
	seriesB, points := tx.Bucket(bucketHistorySeries), tx.Bucket(bucketHistoryPoints)
	incoming := make(map[string]store.SeriesSpan, len(sp.Series))
	for _, s := range sp.Series {
		incoming[s.Plant] = s
	}
	have := map[string]*seriesRecord{}
	prefix := itob(sp.Bed)
	c := seriesB.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		rec := &seriesRecord{}
		if err := json.Unmarshal(v, rec); err != nil {
			return fmt.Errorf("decode series of bed %d: %w", sp.Bed, err)
		}
		have[string(k[8:])] = rec
	}
	for plant, s := range incoming {
		if have[plant] == nil {
			id, err := seriesB.NextSequence()
			if err != nil {
				return err
			}
			have[plant] = &seriesRecord{ID: id, Species: s.Species}
		}
	}
	for plant, rec := range have {
		in, sent := incoming[plant]
		key := chunkKey(rec.ID, sp.Day)
		old := points.Get(key)
		if old == nil && !sent {
			continue
		}
		data, newest, err := store.ReplaceSpan(sp.Day, sp.Slot, old, in.Points)
		if err != nil {
			return fmt.Errorf("series %d: %w", rec.ID, err)
		}
		if data == nil {
			err = points.Delete(key)
		} else {
			err = points.Put(key, data)
		}
		if err != nil {
			return err
		}
		if !sent {
			continue
		}
		rec.Species = in.Species
		if plant == "" {
			rec.Name = in.Name
		}
		if newest != nil && !newest.At.Before(rec.At) {
			rec.At, rec.Values = newest.At, store.AppendValues(rec.Values[:0], newest.HistoryValues)
		}
		if err := putJSON(seriesB, seriesKey(sp.Bed, plant), rec); err != nil {
			return err
		}
	}
	return nil
}

func (w *replicaWriter) PutAlert(a store.Alert) error {
	a, err := store.ReplicaAlert(a)
	if err != nil {
		return err
	}
	tx := w.tx
	if _, err := bedOf(tx, a.Garden, a.Bed); err != nil {
		return err
	}
	old, err := getAlert(tx, a.ID)
	switch {
	case err == nil:
		if old.Open() {
			open := tx.Bucket(bucketAlertsOpen)
			if k := openAlertKey(old.Bed, old.Plant, old.Kind); bytes.Equal(open.Get(k), itob(old.ID)) {
				if err := open.Delete(k); err != nil {
					return err
				}
			}
		}
		if err := tx.Bucket(bucketGardenAlerts).Delete(gardenAlertKey(old)); err != nil {
			return err
		}
	case !errors.Is(err, store.ErrNotFound):
		return err
	}
	if err := putJSON(tx.Bucket(bucketAlerts), itob(a.ID), recordOfAlert(a)); err != nil {
		return err
	}
	if a.Open() {
		if err := tx.Bucket(bucketAlertsOpen).Put(openAlertKey(a.Bed, a.Plant, a.Kind), itob(a.ID)); err != nil {
			return err
		}
	}
	if err := tx.Bucket(bucketGardenAlerts).Put(gardenAlertKey(a), present); err != nil {
		return err
	}
	return tx.Bucket(bucketBedAlerts).Put(pairKey(a.Bed, a.ID), present)
}

func (w *replicaWriter) PutGuidance(gardenID uint64, g store.Guidance) error {
	g = g.Normalize()
	if err := g.Validate(); err != nil {
		return err
	}
	if _, err := getGarden(w.tx, gardenID); err != nil {
		return err
	}
	return putJSON(w.tx.Bucket(bucketGuidance), itob(gardenID), g)
}

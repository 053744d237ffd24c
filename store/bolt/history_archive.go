package bolt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/gardend/gardend/store"
)

// exportHistory writes guidance, series, their chunks and alerts, in the archive's
// order (store/historyarchive.go): series by bed and plant, as their keys sort.
func exportHistory(tx *bbolt.Tx, aw *store.ArchiveWriter) error {
	if err := tx.Bucket(bucketGuidance).ForEach(func(k, v []byte) error {
		g := store.DefaultGuidance()
		if err := json.Unmarshal(v, &g); err != nil {
			return fmt.Errorf("decode guidance of garden %d: %w", btoi(k), err)
		}
		return aw.Write(store.KindGuidance, store.ArchivedGuidance{Garden: btoi(k), Guidance: g})
	}); err != nil {
		return err
	}
	type named struct {
		bed   uint64
		plant string
		id    uint64
	}
	var series []named
	if err := tx.Bucket(bucketHistorySeries).ForEach(func(k, v []byte) error {
		var r seriesRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("decode series %x: %w", k, err)
		}
		bed, plant := btoi(k[:8]), string(k[8:])
		series = append(series, named{bed, plant, r.ID})
		a := store.ArchivedSeries{Bed: bed, Plant: plant, Measurement: r.Measurement, At: r.At.UTC(), Species: r.Species,
			Values: r.Values, Gone: r.Gone, Name: r.Name}
		if !r.Stamp.IsZero() {
			a.Stamp = new(r.Stamp.UTC())
		}
		if a.Values == nil {
			a.Values = store.AppendValues(nil, store.HistoryValues{})
		}
		return aw.Write(store.KindHistorySeries, a)
	}); err != nil {
		return err
	}
	points := tx.Bucket(bucketHistoryPoints)
	for _, s := range series {
		c := points.Cursor()
		prefix := itob(s.id)
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if err := aw.Write(store.KindHistoryChunk, store.ArchivedChunk{Bed: s.bed, Plant: s.plant,
				Day: binary.BigEndian.Uint32(k[8:]), Points: v}); err != nil {
				return err
			}
		}
	}
	return tx.Bucket(bucketAlerts).ForEach(func(k, v []byte) error {
		var r alertRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("decode alert %d: %w", btoi(k), err)
		}
		a := r.alert()
		a.Since = a.Since.UTC()
		if a.Closed != nil {
			a.Closed = new(a.Closed.UTC())
		}
		if a.Task != nil && tx.Bucket(bucketLogs).Get(itob(*a.Task)) == nil {
			a.Task = nil // the task was deleted: forgotten, as PostgreSQL's foreign key does
		}
		return aw.Write(store.KindAlert, store.ArchivedAlertOf(a))
	})
}

// loadHistory writes a record of a history kind; handled is false for another kind.
func (l *loader) loadHistory(rec any) (handled bool, err error) {
	tx := l.tx
	switch r := rec.(type) {
	case *store.ArchivedGuidance:
		if err := l.exists(bucketGardens, r.Garden, "garden"); err != nil {
			return true, err
		}
		if err := l.fresh(bucketGuidance, itob(r.Garden), fmt.Sprintf("guidance of garden %d", r.Garden)); err != nil {
			return true, err
		}
		return true, putJSON(tx.Bucket(bucketGuidance), itob(r.Garden), r.Guidance)
	case *store.ArchivedSeries:
		if err := l.exists(bucketBeds, r.Bed, "bed"); err != nil {
			return true, err
		}
		key := seriesKey(r.Bed, r.Plant)
		if err := l.fresh(bucketHistorySeries, key, fmt.Sprintf("series of bed %d plant %q", r.Bed, r.Plant)); err != nil {
			return true, err
		}
		b := tx.Bucket(bucketHistorySeries)
		id, err := b.NextSequence()
		if err != nil {
			return true, err
		}
		rec := seriesRecord{ID: id, Measurement: r.Measurement, At: r.At.UTC(), Species: r.Species, Values: r.Values, Gone: r.Gone, Name: r.Name}
		if r.Stamp != nil {
			rec.Stamp = r.Stamp.UTC()
		}
		return true, putJSON(b, key, rec)
	case *store.ArchivedChunk:
		s, found, err := getSeries(tx, r.Bed, r.Plant)
		if err != nil {
			return true, err
		}
		if !found {
			return true, fmt.Errorf("%w: the series of bed %d plant %q is not in the archive before its points", store.ErrInvalid, r.Bed, r.Plant)
		}
		key := chunkKey(s.ID, r.Day)
		if err := l.fresh(bucketHistoryPoints, key, fmt.Sprintf("day %d of bed %d plant %q", r.Day, r.Bed, r.Plant)); err != nil {
			return true, err
		}
		return true, tx.Bucket(bucketHistoryPoints).Put(key, r.Points)
	case *store.ArchivedAlert:
		if err := l.fresh(bucketAlerts, itob(r.ID), fmt.Sprintf("alert %d", r.ID)); err != nil {
			return true, err
		}
		b, err := getBed(tx, r.Bed)
		if err != nil || b.Garden != r.Garden {
			return true, fmt.Errorf("%w: bed %d of garden %d is not in the archive", store.ErrInvalid, r.Bed, r.Garden)
		}
		a := r.Alert()
		a.Since = a.Since.UTC()
		if a.Closed != nil {
			a.Closed = new(a.Closed.UTC())
		} else if err := l.fresh(bucketAlertsOpen, openAlertKey(a.Bed, a.Plant, a.Kind), fmt.Sprintf("a second open %s alert of bed %d plant %q", a.Kind, a.Bed, a.Plant)); err != nil {
			return true, err
		}
		if a.Task != nil {
			if err := l.exists(bucketLogs, *a.Task, "log"); err != nil {
				return true, err
			}
		}
		l.seen(bucketAlerts, a.ID)
		if err := putJSON(tx.Bucket(bucketAlerts), itob(a.ID), recordOfAlert(a)); err != nil {
			return true, err
		}
		if a.Open() {
			if err := tx.Bucket(bucketAlertsOpen).Put(openAlertKey(a.Bed, a.Plant, a.Kind), itob(a.ID)); err != nil {
				return true, err
			}
		}
		if err := tx.Bucket(bucketGardenAlerts).Put(gardenAlertKey(a), present); err != nil {
			return true, err
		}
		return true, tx.Bucket(bucketBedAlerts).Put(pairKey(a.Bed, a.ID), present)
	}
	return false, nil
}

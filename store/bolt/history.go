package bolt

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/gardend/gardend/store"
)

// History's layout: a series per bed and per plant (bucketHistorySeries, keyed
// bed|plant with plant "" for the bed) holds a small id and what the series
// remembers of its newest point; its points live in chunks of one UTC day under
// series|day (bucketHistoryPoints), so a series' range is one seek and a walk, and
// keys stay 12 bytes.

// seriesRecord is a series as stored.
type seriesRecord struct {
	ID          uint64    `json:"id"`
	Measurement string    `json:"measurement,omitempty"`
	Stamp       time.Time `json:"stamp"`
	At          time.Time `json:"at"`
	Species     string    `json:"species,omitempty"`
	// Values are store.AppendValues' encoding.
	Values []byte `json:"values,omitempty"`
	Gone   bool   `json:"gone,omitempty"`
	// Name is the bed's name as its newest read showed it (a bed's series).
	Name string `json:"name,omitempty"`
}

func (r seriesRecord) state() (store.SeriesState, error) {
	st := store.SeriesState{Measurement: r.Measurement, Stamp: r.Stamp, At: r.At, Species: r.Species, Gone: r.Gone}
	if len(r.Values) > 0 {
		v, err := store.DecodeValues(r.Values)
		if err != nil {
			return st, fmt.Errorf("series %d: %w", r.ID, err)
		}
		st.Values = v
	}
	return st, nil
}

func seriesKey(bedID uint64, plant string) []byte {
	return append(itob(bedID), plant...)
}

func chunkKey(series uint64, day uint32) []byte {
	k := make([]byte, 12)
	binary.BigEndian.PutUint64(k, series)
	binary.BigEndian.PutUint32(k[8:], day)
	return k
}

func getSeries(tx *bbolt.Tx, bedID uint64, plant string) (seriesRecord, bool, error) {
	var r seriesRecord
	data := tx.Bucket(bucketHistorySeries).Get(seriesKey(bedID, plant))
	if data == nil {
		return r, false, nil
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, false, fmt.Errorf("decode series of bed %d plant %q: %w", bedID, plant, err)
	}
	return r, true, nil
}

// dayChunk is a series' chunk of one day, decoded while a transaction adds to it.
type dayChunk struct {
	day uint32
	pts []store.HistoryPoint
}

// putPoint adds p to the series' chunk of its day, replacing a point at the same
// instant. The chunk stays decoded until a point of another day comes or the
// transaction ends (writeChunks): a batch of readings (a day of hourly scans, the
// demo's seeded history) decodes and encodes each chunk once, not once per point.
func (rc *recorder) putPoint(series uint64, p store.HistoryPoint) error {
	day := store.HistoryDay(p.At)
	ch := rc.chunks[series]
	if ch == nil || ch.day != day {
		if ch != nil {
			if err := rc.writeChunk(series, ch); err != nil {
				return err
			}
		}
		pts, err := store.DecodeChunk(day, rc.tx.Bucket(bucketHistoryPoints).Get(chunkKey(series, day)))
		if err != nil {
			return fmt.Errorf("series %d: %w", series, err)
		}
		ch = &dayChunk{day: day, pts: pts}
		rc.chunks[series] = ch
	}
	i, found := slices.BinarySearchFunc(ch.pts, p.At, func(q store.HistoryPoint, t time.Time) int { return q.At.Compare(t) })
	if found {
		ch.pts[i] = p
	} else {
		ch.pts = slices.Insert(ch.pts, i, p)
	}
	return nil
}

func (rc *recorder) writeChunk(series uint64, ch *dayChunk) error {
	b := rc.tx.Bucket(bucketHistoryPoints)
	// Chunks are mostly appended at the end of a series and rewritten in place:
	// pages filled further than bbolt's default split point stay compact.
	b.FillPercent = 0.9
	return b.Put(chunkKey(series, ch.day), store.EncodeChunk(ch.day, ch.pts))
}

// bedSeries are a bed's series, read once per transaction and written back at its
// end (recorder.flush): a batch of readings of one bed (the demo's seeded history)
// decodes and encodes each series once, not once per reading.
type bedSeries struct {
	bed    uint64
	byName map[string]*seriesRecord
	dirty  map[string]bool
}

// recorder records readings in one transaction.
type recorder struct {
	tx     *bbolt.Tx
	now    time.Time
	beds   map[uint64]*bedSeries
	chunks map[uint64]*dayChunk
	// spans are the (bed, HistorySpanRef) the transaction added points to: the
	// change feed gets each once.
	spans map[[2]uint64]bool
}

func (rc *recorder) series(bedID uint64) (*bedSeries, error) {
	if bs, ok := rc.beds[bedID]; ok {
		return bs, nil
	}
	bs := &bedSeries{bed: bedID, byName: map[string]*seriesRecord{}, dirty: map[string]bool{}}
	prefix := itob(bedID)
	c := rc.tx.Bucket(bucketHistorySeries).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		rec := &seriesRecord{}
		if err := json.Unmarshal(v, rec); err != nil {
			return nil, fmt.Errorf("decode series of bed %d plant %q: %w", bedID, k[8:], err)
		}
		bs.byName[string(k[8:])] = rec
	}
	rc.beds[bedID] = bs
	return bs, nil
}

// point keeps p in the bed's series of plant (made when new) with its state.
func (rc *recorder) point(bs *bedSeries, plant string, rec *seriesRecord, p store.HistoryPoint) error {
	if rec.ID == 0 {
		id, err := rc.tx.Bucket(bucketHistorySeries).NextSequence()
		if err != nil {
			return err
		}
		rec.ID = id
		bs.byName[plant] = rec
	}
	if err := rc.putPoint(rec.ID, p); err != nil {
		return err
	}
	rc.spans[[2]uint64{bs.bed, store.HistorySpanRef(store.HistoryDay(p.At), store.SpanSlot(p.At))}] = true
	rec.At = p.At
	rec.Values = store.AppendValues(rec.Values[:0], p.HistoryValues)
	bs.dirty[plant] = true
	return nil
}

// flush writes the changed chunks and series, in key order (bbolt appends fastest).
func (rc *recorder) flush() error {
	for _, id := range slices.Sorted(maps.Keys(rc.chunks)) {
		if err := rc.writeChunk(id, rc.chunks[id]); err != nil {
			return err
		}
	}
	b := rc.tx.Bucket(bucketHistorySeries)
	for _, bs := range rc.beds {
		for plant := range bs.dirty {
			if err := putJSON(b, seriesKey(bs.bed, plant), bs.byName[plant]); err != nil {
				return err
			}
		}
	}
	return nil
}

// recordSpans appends a change for each span a reading added points to (before its
// alerts, as PostgreSQL does).
func (rc *recorder) recordSpans() error {
	spans := slices.SortedFunc(maps.Keys(rc.spans), func(a, b [2]uint64) int {
		if c := cmp.Compare(a[0], b[0]); c != 0 {
			return c
		}
		return cmp.Compare(a[1], b[1])
	})
	clear(rc.spans)
	for _, sp := range spans {
		if err := recordChange(rc.tx, rc.now, store.KindHistory, sp[0], sp[1], false); err != nil {
			return err
		}
	}
	return nil
}

// RecordReading keeps what a read of a bed showed (store.HistoryStore).
func (s *Store) RecordReading(r store.BedReading) (store.Recorded, error) {
	return s.RecordReadings([]store.BedReading{r})
}

// RecordReadings keeps several readings in one transaction.
func (s *Store) RecordReadings(rs []store.BedReading) (store.Recorded, error) {
	for _, r := range rs {
		if err := store.ValidateReading(r); err != nil {
			return store.Recorded{}, err
		}
	}
	var out store.Recorded
	err := s.db.Update(func(tx *bbolt.Tx) error {
		out = store.Recorded{}
		rc := &recorder{tx: tx, now: s.now(), beds: map[uint64]*bedSeries{}, chunks: map[uint64]*dayChunk{}, spans: map[[2]uint64]bool{}}
		for _, r := range rs {
			if err := rc.record(r, &out); err != nil {
				return err
			}
		}
		return rc.flush()
	})
	return out, err
}

func (rc *recorder) record(r store.BedReading, out *store.Recorded) error {
	if !store.IsLocal(r.Bed) {
		return nil // a replica's history comes from its home, never from a read here
	}
	tx := rc.tx
	b, err := getBed(tx, r.Bed)
	if errors.Is(err, store.ErrNotFound) {
		return nil // deleted since it was read
	}
	if err != nil {
		return err
	}
	g, err := guidanceOf(tx, b.Garden)
	if err != nil {
		return err
	}
	open, err := openAlertsOfBed(tx, b.ID)
	if err != nil {
		return err
	}
	bs, err := rc.series(b.ID)
	if err != nil {
		return err
	}
	var plan store.AlertPlan
	seen := make(map[string]bool, len(r.Plants))
	recorded := 0
	for _, p := range r.Plants {
		seen[p.ID] = true
		rec := bs.byName[p.ID]
		if rec == nil {
			rec = &seriesRecord{}
		}
		st, err := rec.state()
		if err != nil {
			return err
		}
		sub := store.AlertSubject{Garden: b.Garden, Bed: b.ID, BedName: r.Name, Plant: p.ID, Species: store.SpeciesName(p.Species)}
		if rec.ID != 0 && !st.IsNew(p, r.Read) {
			if rec.Gone {
				rec.Gone = false
				bs.dirty[p.ID] = true
			}
			continue
		}
		at := p.At(r.Read)
		rec.Measurement, rec.Stamp, rec.Species, rec.Gone = p.Measurement, store.HistoryTime(p.Stamp), sub.Species, false
		if p.Stamp.IsZero() {
			rec.Stamp = time.Time{}
		}
		if err := rc.point(bs, p.ID, rec, store.HistoryPoint{At: at, HistoryValues: p.Values}); err != nil {
			return err
		}
		recorded++
		plan.Add(store.PlanAlerts(g.Thresholds, sub, open[p.ID], p.Values, at, false))
	}
	// Plants the read no longer shows: their alerts close.
	for plant, rec := range bs.byName {
		if plant == "" || seen[plant] || rec.Gone {
			continue
		}
		rec.Gone = true
		bs.dirty[plant] = true
		sub := store.AlertSubject{Garden: b.Garden, Bed: b.ID, BedName: r.Name, Plant: plant, Species: rec.Species}
		plan.Add(store.PlanAlerts(g.Thresholds, sub, open[plant], store.HistoryValues{}, r.Read, true))
	}
	if recorded > 0 {
		rec := bs.byName[""]
		if rec == nil {
			rec = &seriesRecord{}
		}
		rec.Measurement, rec.Stamp, rec.Species, rec.Name = "", time.Time{}, store.SpeciesName(r.Species), r.Name
		at := store.HistoryTime(r.At)
		if err := rc.point(bs, "", rec, store.HistoryPoint{At: at, HistoryValues: r.Summary}); err != nil {
			return err
		}
		out.Bed = true
		sub := store.AlertSubject{Garden: b.Garden, Bed: b.ID, BedName: r.Name, Species: rec.Species}
		plan.Add(store.PlanAlerts(g.Thresholds, sub, open[""], r.Summary, at, false))
	}
	out.Plants += recorded
	if err := rc.recordSpans(); err != nil {
		return err
	}
	return applyAlertPlan(tx, rc.now, plan, out)
}

// BedHistory lists a bed's points (store.HistoryStore).
func (s *Store) BedHistory(gardenID, bedID uint64, from, until time.Time, limit int) ([]store.HistoryPoint, error) {
	return s.history(gardenID, bedID, "", from, until, limit)
}

// PlantHistory lists a plant's points (store.HistoryStore).
func (s *Store) PlantHistory(gardenID, bedID uint64, plant string, from, until time.Time, limit int) ([]store.HistoryPoint, error) {
	if plant == "" {
		return nil, fmt.Errorf("plant %q: %w", plant, store.ErrNotFound)
	}
	return s.history(gardenID, bedID, plant, from, until, limit)
}

func (s *Store) history(gardenID, bedID uint64, plant string, from, until time.Time, limit int) ([]store.HistoryPoint, error) {
	limit = store.HistoryLimit(limit)
	out := []store.HistoryPoint{}
	err := s.db.View(func(tx *bbolt.Tx) error {
		out = out[:0]
		if _, err := bedOf(tx, gardenID, bedID); err != nil {
			return err
		}
		rec, found, err := getSeries(tx, bedID, plant)
		if err != nil || !found {
			return err
		}
		first, last, ok := store.HistoryRange(from, until)
		if !ok {
			return nil
		}
		c := tx.Bucket(bucketHistoryPoints).Cursor()
		prefix := itob(rec.ID)
		end := chunkKey(rec.ID, last)
		type chunk struct {
			day  uint32
			data []byte
		}
		var chunks []chunk
		size := 0
		for k, v := c.Seek(chunkKey(rec.ID, first)); k != nil && bytes.HasPrefix(k, prefix) && bytes.Compare(k, end) <= 0; k, v = c.Next() {
			chunks = append(chunks, chunk{binary.BigEndian.Uint32(k[8:]), v})
			size += len(v)
		}
		// A point takes at least 2 bytes and typically 16: room for what the chunks
		// likely hold, so the list is not copied as it grows.
		out = make([]store.HistoryPoint, 0, min(size/12+16, limit+1))
		var cr store.ChunkReader
		for _, ch := range chunks {
			if out, err = cr.Append(out, ch.day, ch.data, from, until); err != nil {
				return fmt.Errorf("series %d: %w", rec.ID, err)
			}
			if len(out) > limit {
				return store.TooManyPoints(limit)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DropHistoryBefore deletes the points dated before t (store.HistoryStore).
func (s *Store) DropHistoryBefore(t time.Time) (int, error) {
	if !store.InHistoryRange(t) {
		return 0, nil
	}
	cut := store.HistoryDay(t)
	dropped := 0
	err := s.db.Update(func(tx *bbolt.Tx) error {
		dropped = 0
		points := tx.Bucket(bucketHistoryPoints)
		var series []uint64
		if err := tx.Bucket(bucketHistorySeries).ForEach(func(_, v []byte) error {
			var rec seriesRecord
			if err := json.Unmarshal(v, &rec); err != nil {
				return err
			}
			series = append(series, rec.ID)
			return nil
		}); err != nil {
			return err
		}
		type change struct {
			key  []byte
			data []byte // nil: delete
		}
		var changes []change
		for _, id := range series {
			c := points.Cursor()
			prefix := itob(id)
			for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
				day := binary.BigEndian.Uint32(k[8:])
				if day > cut {
					break
				}
				data, n, err := store.TrimChunk(day, v, t)
				if err != nil {
					return fmt.Errorf("series %d: %w", id, err)
				}
				if n == 0 {
					continue
				}
				dropped += n
				changes = append(changes, change{key: bytes.Clone(k), data: data})
			}
		}
		for _, ch := range changes {
			var err error
			if ch.data == nil {
				err = points.Delete(ch.key)
			} else {
				err = points.Put(ch.key, ch.data)
			}
			if err != nil {
				return err
			}
		}
		return dropClosedAlertsBefore(tx, t)
	})
	return dropped, err
}

// deleteBedHistory deletes a bed's series, points and alerts (deleteBed's).
func deleteBedHistory(tx *bbolt.Tx, bedID uint64) error {
	prefix := itob(bedID)
	var keys [][]byte
	var ids []uint64
	c := tx.Bucket(bucketHistorySeries).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var rec seriesRecord
		if err := json.Unmarshal(v, &rec); err != nil {
			return fmt.Errorf("decode series of bed %d: %w", bedID, err)
		}
		keys = append(keys, bytes.Clone(k))
		ids = append(ids, rec.ID)
	}
	points := tx.Bucket(bucketHistoryPoints)
	for _, id := range ids {
		var chunks [][]byte
		pc := points.Cursor()
		for k, _ := pc.Seek(itob(id)); k != nil && bytes.HasPrefix(k, itob(id)); k, _ = pc.Next() {
			chunks = append(chunks, bytes.Clone(k))
		}
		for _, k := range chunks {
			if err := points.Delete(k); err != nil {
				return err
			}
		}
	}
	for _, k := range keys {
		if err := tx.Bucket(bucketHistorySeries).Delete(k); err != nil {
			return err
		}
	}
	return deleteBedAlerts(tx, bedID)
}

package scan

import (
	"encoding/binary"
	"hash/fnv"
	"sync"
	"sync/atomic"

	"github.com/gardend/gardend/store"
)

// Recorder hands readings to the store, skipping a reading of a bed that shows the
// same measurements as the last one this node recorded for it: most reads (every
// page load) find nothing new, and a write transaction each would cost a disk sync.
// The memory is only a cache: the store decides what is new.
type Recorder struct {
	st store.HistoryStore

	mu   sync.Mutex
	last map[uint64]uint64 // bed → fingerprint of its last recorded reading

	recorded, skipped, bedPoints, plantPoints, raised, closed atomic.Int64
}

// RecorderStats counts what a Recorder did since it was made, whoever read the beds.
type RecorderStats struct {
	// Recorded readings were handed to the store; Skipped ones showed what this
	// node recorded last.
	Recorded, Skipped int64
	// BedPoints and PlantPoints are the points the store kept.
	BedPoints, PlantPoints int64
	// Raised and Closed count alerts.
	Raised, Closed int64
}

// Stats returns the counts so far.
func (rc *Recorder) Stats() RecorderStats {
	return RecorderStats{Recorded: rc.recorded.Load(), Skipped: rc.skipped.Load(), BedPoints: rc.bedPoints.Load(),
		PlantPoints: rc.plantPoints.Load(), Raised: rc.raised.Load(), Closed: rc.closed.Load()}
}

// maxRemembered bounds the beds a Recorder remembers; past it, it starts over.
const maxRemembered = 100000

// NewRecorder records into st.
func NewRecorder(st store.HistoryStore) *Recorder {
	return &Recorder{st: st, last: map[uint64]uint64{}}
}

// Record keeps r unless this node recorded the same measurements of the bed last;
// skipped reports that it did not ask the store.
func (rc *Recorder) Record(r store.BedReading) (rec store.Recorded, skipped bool, err error) {
	fp := fingerprint(r)
	rc.mu.Lock()
	same := rc.last[r.Bed] == fp
	rc.mu.Unlock()
	if same {
		rc.skipped.Add(1)
		return store.Recorded{}, true, nil
	}
	rec, err = rc.st.RecordReading(r)
	if err != nil {
		return rec, false, err
	}
	rc.recorded.Add(1)
	if rec.Bed {
		rc.bedPoints.Add(1)
	}
	rc.plantPoints.Add(int64(rec.Plants))
	rc.raised.Add(int64(rec.Raised))
	rc.closed.Add(int64(rec.Closed))
	rc.mu.Lock()
	if len(rc.last) >= maxRemembered {
		rc.last = map[uint64]uint64{}
	}
	rc.last[r.Bed] = fp
	rc.mu.Unlock()
	return rec, false, nil
}

// Forget drops what the Recorder remembers (tests, and a store replaced by a
// restore).
func (rc *Recorder) Forget() {
	rc.mu.Lock()
	rc.last = map[uint64]uint64{}
	rc.mu.Unlock()
}

// fingerprint identifies what a reading would record: the bed's name and each
// plant's id and measurement.
func fingerprint(r store.BedReading) uint64 {
	h := fnv.New64a()
	var n [8]byte
	put := func(s string) {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	put(r.Name)
	for _, p := range r.Plants {
		put(p.ID)
		put(p.Measurement)
		binary.BigEndian.PutUint64(n[:], uint64(p.Stamp.UnixMicro()))
		h.Write(n[:])
	}
	return h.Sum64() | 1 // never 0, the value of a bed not remembered
}

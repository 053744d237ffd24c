package scan

import (
	"encoding/binary"
	"hash/fnv"
	"sync"

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
		return store.Recorded{}, true, nil
	}
	rec, err = rc.st.RecordReading(r)
	if err != nil {
		return rec, false, err
	}
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

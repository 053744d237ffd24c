package server

import (
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/gardend/gardend/server/sitesync"
	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/store"
)

// A field box keeps the latest values its spatial server gave for each bed
// (store.BedValues), and they travel to the office with the bed; there the beds
// stream and the plants answer of the box's gardens come from them, "as of" when the
// box read them, without reaching the farm's spatial server (docs/sync.md).

// bedValuesDoc is what store.BedValues.Data holds: the stream's line and the plants
// answer as the home rendered them.
type bedValuesDoc struct {
	Bed    bedJSON     `json:"bed"`
	Plants []plantJSON `json:"plants"`
}

// bedValuesRefresh is how old kept values may get before the same values are written
// again, so that "as of" says when the box last saw them.
const bedValuesRefresh = 10 * time.Minute

// keptValues remembers what was last written per bed, so unchanged values are not
// written (and sent) at every request.
type keptValues struct {
	mu sync.Mutex
	m  map[uint64]keptValue
	// busy: a write is under way; values read meanwhile wait for the next request.
	busy bool
}

type keptValue struct {
	digest [sha256.Size]byte
	at     time.Time
}

// keepsBedValues: only a field box that syncs keeps values (for the office).
func (s *Server) keepsBedValues() bool {
	_, box := s.sync.(*sitesync.Box)
	return box
}

// bedValuesOf renders a bed the spatial server answered for as kept values.
func bedValuesOf(b store.Bed, line bedJSON, bed spatial.Bed, coords []*store.LatLon, now time.Time) store.BedValues {
	doc := bedValuesDoc{Bed: line, Plants: make([]plantJSON, len(bed.Plants))}
	doc.Bed.Plants, doc.Bed.AsOf = "", nil
	for i, p := range bed.Plants {
		doc.Plants[i] = newPlantJSON(b.ID, bedName(b, &bed), p, coords[i], now)
	}
	data, _ := json.Marshal(doc) // plain values: cannot fail
	return store.BedValues{Bed: b.ID, Garden: b.Garden, At: now, Data: data}
}

// keepBedValues writes the values that changed, or that were written long ago, in
// the background: a request never waits for it.
func (s *Server) keepBedValues(vals []store.BedValues) {
	if len(vals) == 0 || !s.keepsBedValues() {
		return
	}
	k := &s.keptValues
	k.mu.Lock()
	if k.busy {
		k.mu.Unlock()
		return
	}
	if k.m == nil {
		k.m = map[uint64]keptValue{}
	}
	var todo []store.BedValues
	for _, v := range vals {
		d := sha256.Sum256(v.Data)
		if old, ok := k.m[v.Bed]; ok && old.digest == d && v.At.Sub(old.at) < bedValuesRefresh {
			continue
		}
		todo = append(todo, v)
	}
	if len(todo) == 0 {
		k.mu.Unlock()
		return
	}
	k.busy = true
	k.mu.Unlock()
	go func() {
		defer func() {
			k.mu.Lock()
			k.busy = false
			k.mu.Unlock()
		}()
		for _, v := range todo {
			if err := s.store.PutBedValues(v); err != nil {
				s.log.Warn().Err(err).Uint64("bed_id", v.Bed).Msg("keep the bed's values for the office")
				continue
			}
			k.mu.Lock()
			k.m[v.Bed] = keptValue{digest: sha256.Sum256(v.Data), at: v.At}
			k.mu.Unlock()
		}
	}()
}

// streamReplicaBeds answers the beds stream of a garden homed at another site from
// the values its home kept, each line with as_of.
func (s *Server) streamReplicaBeds(w http.ResponseWriter, r *http.Request, g store.Garden) {
	beds, err := s.store.BedsOfGarden(g.ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	vals, err := s.store.BedValuesOfGarden(g.ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	byBed := make(map[uint64]store.BedValues, len(vals))
	for _, v := range vals {
		byBed[v.Bed] = v
	}
	h := w.Header()
	h.Set("Content-Type", "application/x-ndjson")
	h["Cache-Control"] = headerNoStore
	h.Set("X-Total-Count", idText(uint64(len(beds))))
	w.WriteHeader(http.StatusOK)
	plantsURL := s.baseURL(r) + "/companies/" + idText(g.Company) + "/gardens/" + idText(g.ID) + "/beds/"
	var out []byte
	for _, b := range beds {
		line := bedJSON{ID: b.ID, Plants: plantsURL + idText(b.ID) + "/plants",
			Error: "no values from the bed's site yet: they come with its next sync"}
		if v, ok := byBed[b.ID]; ok {
			var doc bedValuesDoc
			if err := json.Unmarshal(v.Data, &doc); err != nil {
				s.log.Error().Err(err).Uint64("bed_id", b.ID).Msg("decode a bed's kept values")
				line.Error = "the bed's kept values could not be read; the server log has the details"
			} else {
				at := v.At.UTC()
				line = doc.Bed
				line.ID, line.Plants, line.AsOf = b.ID, plantsURL+idText(b.ID)+"/plants", &at
			}
		}
		out, err = appendJSONLine(out, line)
		if err != nil {
			s.log.Error().Err(err).Uint64("bed_id", b.ID).Msg("encode bed")
			return
		}
	}
	_, _ = w.Write(out) // the client went away: nothing to do
}

// replicaPlants answers the plants of a bed homed at another site from its kept
// values, with as_of (absent when none came yet).
func (s *Server) replicaPlants(w http.ResponseWriter, r *http.Request, b store.Bed) {
	vals, err := s.store.BedValuesOfGarden(b.Garden)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := struct {
		Plants []plantJSON `json:"plants"`
		AsOf   *time.Time  `json:"as_of,omitempty"`
	}{Plants: []plantJSON{}}
	for _, v := range vals {
		if v.Bed != b.ID {
			continue
		}
		var doc bedValuesDoc
		if err := json.Unmarshal(v.Data, &doc); err != nil {
			s.writeError(w, r, err)
			return
		}
		at := v.At.UTC()
		out.AsOf = &at
		for _, p := range doc.Plants {
			p.BedID, p.BedIDCompat, p.PointCloud = b.ID, b.ID, ""
			out.Plants = append(out.Plants, p)
		}
	}
	s.writeJSON(w, r, http.StatusOK, out)
}

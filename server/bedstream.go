package server

import (
	"encoding/json"
	"net/http"

	"github.com/gardend/gardend/store"
)

// handleListBeds streams the garden's beds as NDJSON in ascending bed id, each line
// written and flushed as soon as it and every earlier bed are ready. The beds are read
// from the spatial server all at once (spatial.Client.Beds); a bed the server cannot
// answer for becomes an error line and the stream goes on (with --compat plantmap, one
// whose project it does not know is left out, as the original did). The client going away
// cancels the calls still outstanding. Point clouds found missing are queued in one
// write when the stream ends, however it ends.
func (s *Server) handleListBeds(w http.ResponseWriter, r *http.Request) {
	g, _, err := s.gardenFromPath(r)
	if err == nil && !store.IsLocal(g.ID) {
		s.streamReplicaBeds(w, r, g)
		return
	}
	if err == nil && s.spatial == nil {
		err = errNoSpatial
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	beds, err := s.store.BedsOfGarden(g.ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "application/x-ndjson")
	h["Cache-Control"] = headerNoStore
	h.Set("X-Total-Count", idText(uint64(len(beds)))) // lets a client show "4 of 6 beds"
	w.WriteHeader(http.StatusOK)
	if len(beds) == 0 {
		return
	}
	if err := rc.Flush(); err != nil { // the client sees the status before the first bed is ready
		return
	}

	plantsURL := s.baseURL(r) + "/companies/" + idText(g.Company) + "/gardens/" + idText(g.ID) + "/beds/"
	uuids := make([]string, len(beds))
	for i, b := range beds {
		uuids[i] = b.UUID
	}
	var jobs []store.CloudJob
	defer func() { s.clouds.Enqueue(jobs) }()
	var kept []store.BedValues
	defer func() { s.keepBedValues(kept) }()
	now := s.cfg.Now()
	var line []byte
	written := 0
	for res := range s.spatial.Beds(s.spatialContext(r, g.ID), uuids) {
		b := beds[res.Index]
		url := plantsURL + idText(b.ID) + "/plants"
		v := bedJSON{ID: b.ID, Name: b.Name, Plants: url}
		if res.Err != nil && s.skipUnknownProject(r, b.ID, b.UUID, res.Err) {
			continue
		}
		if res.Err != nil {
			v.Error = s.bedErrorText(r, b.ID, res.Err)
		} else if coords, bedJobs, err := s.clouds.Coords(res.Bed, false); err != nil {
			s.log.Error().Err(err).Str("request_id", requestID(r)).Uint64("bed_id", b.ID).Msg("read plant positions")
			v.Error = "could not read the stored plant positions; the server log has the details"
		} else {
			// The plants' ids are kept at first sight, whichever answer shows them first.
			if err := s.keepPlantIDs(&res.Bed); err != nil {
				s.log.Warn().Err(err).Str("request_id", requestID(r)).Uint64("bed_id", b.ID).Msg("keep plant ids")
			}
			v = newBedJSON(b.ID, bedName(b, &res.Bed), url, res.Bed, coords, now)
			jobs = append(jobs, bedJobs...)
			if s.keepsBedValues() {
				kept = append(kept, bedValuesOf(b, v, res.Bed, coords, now))
			}
			s.recordRead(r, b, &res.Bed)
		}
		// One Write per line, so the stream never stops half-way through one.
		line, err = appendJSONLine(line[:0], v)
		if err != nil {
			s.log.Error().Err(err).Uint64("bed_id", b.ID).Msg("encode bed")
			line, _ = appendJSONLine(line[:0], bedJSON{ID: b.ID, Plants: url, Error: "the bed's data could not be encoded"})
		}
		if !s.compatLineGap(r.Context(), written == 0) {
			return
		}
		written++
		// A large garden may stream for longer than the write timeout; it may go on as
		// long as lines go out, and a client that stops reading is still cut off.
		if err := s.extendWriteDeadline(w); err != nil {
			return
		}
		if _, err := w.Write(line); err != nil {
			return // the client went away; r.Context() cancels the rest
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}

func appendJSONLine(buf []byte, v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return buf, err
	}
	return append(append(buf, data...), '\n'), nil
}

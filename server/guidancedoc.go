package server

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"slices"
	"sort"

	"github.com/gardend/gardend/store"
)

// A garden's guidance (issue 18): its alert thresholds and its own advice, which
// overrides the built-in advice (server/guidance) per species and kind. Readers of
// the garden read it; admins replace it whole.

func (s *Server) guidanceRoutes() []route {
	const path = "/companies/:company_id/gardens/:garden_id/guidance"
	return []route{
		{method: "GET", path: path, handler: s.handleGetGuidance},
		{method: "PUT", path: path, handler: s.handlePutGuidance},
	}
}

func (s *Server) handleGetGuidance(w http.ResponseWriter, r *http.Request) {
	g, _, err := s.gardenFromPath(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	doc, err := s.store.Guidance(g.ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, doc)
}

// handlePutGuidance replaces the garden's guidance; the store re-evaluates every
// alert of the garden against the new thresholds in the same transaction.
func (s *Server) handlePutGuidance(w http.ResponseWriter, r *http.Request) {
	g, rl, err := s.gardenFromPath(r)
	if err == nil {
		err = needAdmin(rl, "garden")
	}
	if err == nil {
		// Guidance is the garden's: written at its home only (docs/sync.md).
		err = s.atHome("garden", g.ID)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !isJSON(r) {
		s.writeError(w, r, errNotJSON)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		s.writeError(w, r, jsonError(err))
		return
	}
	doc, err := decodeGuidance(body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	saved, rec, err := s.store.SetGuidance(g.ID, doc)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if rec.Raised+rec.Closed > 0 {
		s.log.Info().Str("request_id", requestID(r)).Uint64("garden_id", g.ID).Int("raised", rec.Raised).Int("closed", rec.Closed).Msg("new thresholds re-evaluated the garden's alerts")
	}
	s.writeJSON(w, r, http.StatusOK, saved)
}

// decodeGuidance reads a guidance document member by member: a member of the wrong
// type is a 400 naming it by its path ("thresholds.water",
// "advice.tomato.water.steps[1]"); a missing threshold takes its default; unknown
// members are ignored (decisions.md). What the values must be is the store's to
// check (store.Guidance.Validate).
func decodeGuidance(body []byte) (store.Guidance, error) {
	doc := store.DefaultGuidance()
	v := &store.ValidationError{}
	top, ok := object(body)
	if !ok {
		return doc, badRequest("body", "the body must be a JSON object: {\"thresholds\": {…}, \"advice\": {…}}")
	}
	if raw, present := top["thresholds"]; present && !isNullJSON(raw) {
		th, ok := object(raw)
		if !ok {
			v.Add("thresholds", "thresholds must be an object: {\"water\": 3, \"nutrients\": 3, \"diseases\": 2, \"soil_humidity_min\": 0.25}")
		}
		for name, dst := range map[string]*int64{"water": &doc.Thresholds.Water, "nutrients": &doc.Thresholds.Nutrients, "diseases": &doc.Thresholds.Diseases} {
			raw, present := th[name]
			if !present || isNullJSON(raw) {
				continue
			}
			var f float64
			if err := json.Unmarshal(raw, &f); err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
				v.Add("thresholds."+name, "thresholds."+name+" must be a whole number, the level that raises an alert")
				continue
			}
			*dst = int64(f)
		}
		if raw, present := th["soil_humidity_min"]; present && !isNullJSON(raw) {
			if err := json.Unmarshal(raw, &doc.Thresholds.SoilHumidityMin); err != nil {
				v.Add("thresholds.soil_humidity_min", "thresholds.soil_humidity_min must be a number from 0 to 1")
			}
		}
	}
	if raw, present := top["advice"]; present && !isNullJSON(raw) {
		species, ok := object(raw)
		if !ok {
			v.Add("advice", "advice must be an object of species (or * for any), each an object of kinds: {\"tomato\": {\"water\": {\"title\": …, \"steps\": […]}}}")
		}
		for _, sp := range sortedKeys(species) {
			field := "advice." + sp
			kinds, ok := object(species[sp])
			if !ok {
				v.Add(field, field+" must be an object of kinds (water, nutrients, diseases, soil_humidity)")
				continue
			}
			m := map[store.AlertKind]store.Advice{}
			for _, k := range sortedKeys(kinds) {
				kf := field + "." + k
				a, ok := object(kinds[k])
				if !ok {
					v.Add(kf, kf+" must be an object: {\"title\": \"…\", \"steps\": [\"…\"]}")
					continue
				}
				var adv store.Advice
				if err := json.Unmarshal(a["title"], &adv.Title); a["title"] == nil || err != nil {
					v.Add(kf+".title", kf+".title must be a string")
				}
				if err := json.Unmarshal(a["steps"], &adv.Steps); a["steps"] == nil || err != nil {
					v.Add(kf+".steps", kf+".steps must be an array of strings")
				}
				m[store.AlertKind(k)] = adv
			}
			doc.Advice[sp] = m
		}
	}
	if err := v.OrNil(); err != nil {
		return doc, err
	}
	return doc, nil
}

// object reads a JSON object's members; ok is false for anything else (or trailing
// data).
func object(raw []byte) (map[string]json.RawMessage, bool) {
	var m map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return m, true
}

func isNullJSON(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return slices.Clip(keys)
}

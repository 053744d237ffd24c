package server

import (
	"net/http"

	"github.com/gardend/gardend/store"

	"github.com/gardend/gardend/server/pointcloud"
)

// handleListPlants answers {"plants": [...]} for one bed, per plant, in plant-name
// order; 502 when the spatial server cannot answer. Missing point clouds are queued.
func (s *Server) handleListPlants(w http.ResponseWriter, r *http.Request) {
	if _, b, _, err := s.bedFromPath(r); err == nil && !store.IsLocal(b.ID) {
		s.replicaPlants(w, r, b)
		return
	}
	b, bed, err := s.spatialBedFromPath(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	before, err := s.store.CloudState(bed.ProjectUUID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	coords, jobs, err := s.clouds.Coords(bed, false)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.clouds.Enqueue(jobs)
	now := s.cfg.Now()
	out := struct {
		Plants []plantJSON `json:"plants"`
	}{Plants: make([]plantJSON, len(bed.Plants))}
	status := pointcloud.Statuses(bed, before, coords, jobs)
	name := bedName(b, &bed)
	for i, p := range bed.Plants {
		out.Plants[i] = newPlantJSON(b.ID, name, p, coords[i], now)
		out.Plants[i].PointCloud = status[i]
	}
	if s.keepsBedValues() {
		url := s.baseURL(r) + r.URL.Path
		s.keepBedValues([]store.BedValues{bedValuesOf(b, newBedJSON(b.ID, name, url, bed, coords, now), bed, coords, now)})
	}
	if s.cfg.CompatPlantMap {
		compat := struct {
			Plants []placeholderPlantJSON `json:"plants"`
		}{Plants: make([]placeholderPlantJSON, len(out.Plants))}
		for i, p := range out.Plants {
			compat.Plants[i] = withPlaceholders(p)
		}
		s.writeJSON(w, r, http.StatusOK, compat)
		return
	}
	s.writeJSON(w, r, http.StatusOK, out)
}

package server

import (
	"net/http"

	"github.com/gardend/gardend/store"
)

// spatialProject is a project of the spatial server with the bed of this garden
// registered for it, if any.
type spatialProject struct {
	UUID  string `json:"uuid"`
	Name  string `json:"name"`
	BedID uint64 `json:"bed_id,omitempty"`
}

// handleSpatialProjects lists the spatial server's projects (GetProjects) beside the
// garden's registered beds, for its admins choosing what to register or remove. Beds
// whose project the server no longer lists appear only under "beds".
func (s *Server) handleSpatialProjects(w http.ResponseWriter, r *http.Request) {
	g, err := s.adminGarden(r)
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
	projects, err := s.spatial.Projects(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	bedOf := make(map[string]uint64, len(beds))
	for _, b := range beds {
		bedOf[b.UUID] = b.ID
	}
	out := struct {
		Projects []spatialProject `json:"projects"`
		Beds     []store.Bed      `json:"beds"`
	}{Projects: make([]spatialProject, len(projects)), Beds: beds}
	if out.Beds == nil {
		out.Beds = []store.Bed{}
	}
	for i, p := range projects {
		out.Projects[i] = spatialProject{UUID: p.UUID, Name: p.Name, BedID: bedOf[p.UUID]}
	}
	s.writeJSON(w, r, http.StatusOK, out)
}

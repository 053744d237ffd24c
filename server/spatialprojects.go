package server

import (
	"fmt"
	"net/http"

	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/store"
)

// Who may see every project of the spatial server (Config.SpatialProjects).
const (
	// SpatialProjectsGardenAdmins: every garden admin (one farm per spatial server).
	SpatialProjectsGardenAdmins = "garden-admins"
	// SpatialProjectsSiteAdmins: site administrators only; a garden admin sees the
	// garden's own beds (a spatial server shared by several tenants).
	SpatialProjectsSiteAdmins = "site-admins"
)

// CheckSpatialProjects refuses an unknown --spatial-projects value.
func CheckSpatialProjects(v string) error {
	switch v {
	case "", SpatialProjectsGardenAdmins, SpatialProjectsSiteAdmins:
		return nil
	}
	return fmt.Errorf("--spatial-projects %q: use %s or %s", v, SpatialProjectsGardenAdmins, SpatialProjectsSiteAdmins)
}

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
	var projects []spatial.Project
	if s.cfg.SpatialProjects == SpatialProjectsSiteAdmins && !currentUser(r).SiteAdmin {
		// The server's list would show this admin other tenants' projects: only the
		// garden's own beds are listed; new ones are registered by uuid.
		for _, b := range beds {
			projects = append(projects, spatial.Project{UUID: b.UUID, Name: b.Name})
		}
	} else if projects, err = s.spatial.Projects(r.Context()); err != nil {
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

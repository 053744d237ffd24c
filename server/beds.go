package server

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/gardend/gardend/store"
)

// Beds are registered here; listing them with their plants needs the spatial data
// server and lives in bedstream.go and plants.go.

func (s *Server) bedRoutes() []route {
	return []route{
		{method: "POST", path: "/companies/:company_id/gardens/:garden_id/beds", handler: s.handleCreateBed},
		{method: "GET", path: "/companies/:company_id/gardens/:garden_id/beds", handler: s.handleListBeds},
		{method: "DELETE", path: "/companies/:company_id/gardens/:garden_id/beds/:bed_id", handler: s.handleDeleteBed},
		{method: "GET", path: "/companies/:company_id/gardens/:garden_id/beds/:bed_id/plants", handler: s.handleListPlants},
	}
}

func (s *Server) handleCreateBed(w http.ResponseWriter, r *http.Request) {
	g, err := s.adminGarden(r)
	if err == nil {
		err = s.atHome("garden", g.ID)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// Missing fields arrive as "": the store requires the uuid, the name is optional.
	var req struct {
		UUID string `json:"uuid"`
		Name string `json:"name"`
	}
	if err := decodeJSON(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	me := currentUser(r)
	b, err := s.store.CreateBedFor(me.ID, g.ID, req.UUID, req.Name, max(s.cfg.MaxBedsPerGarden, 0), func(others []store.ProjectBed) error {
		return mayShareProject(me, req.UUID, others)
	})
	if errors.Is(err, store.ErrTooManyBeds) {
		err = &apiError{status: http.StatusBadRequest, detail: fmt.Sprintf(
			"garden %d has %d beds, the most a garden may have here: remove a bed first, or ask the operator to raise gardend serve --max-beds-per-garden",
			g.ID, s.cfg.MaxBedsPerGarden)}
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusCreated, b)
}

// mayShareProject decides whether the user may register a project that is already a
// bed of other gardens: only when they administer every one of those gardens (or the
// site). A bed's project uuid is no secret (every reader of the bed sees it, in each
// signed cloud URL too), so knowing it must not be enough to read the bed's data from
// a garden of one's own: a reader whose permission was removed would keep reading.
func mayShareProject(me *store.User, uuid string, others []store.ProjectBed) error {
	if me.SiteAdmin {
		return nil
	}
	for _, o := range others {
		if gardenRole(me, o.Access) < roleAdmin {
			msg := fmt.Sprintf("project %s is already a bed of a garden you do not administer: only an admin of that garden, or a site administrator, may register it in another garden", uuid)
			return &apiError{status: http.StatusForbidden, detail: msg, fields: map[string]string{"uuid": msg}}
		}
	}
	return nil
}

func (s *Server) handleDeleteBed(w http.ResponseWriter, r *http.Request) {
	g, b, err := s.adminBed(r)
	if err == nil {
		err = s.atHome("bed", b.ID)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	removed, err := s.store.DeleteBed(g.ID, b.ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.afterRemove(r.Context(), removed)
	writeRawJSON(w, http.StatusOK, []byte("{}"))
}

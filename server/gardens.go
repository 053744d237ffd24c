package server

import (
	"net/http"

	"github.com/gardend/gardend/store"
)

func (s *Server) gardenRoutes() []route {
	return []route{
		{method: "GET", path: "/gardens", handler: s.handleListGardens},
		{method: "POST", path: "/companies/:company_id/gardens", handler: s.handleCreateGarden},
		{method: "GET", path: "/companies/:company_id/gardens", handler: s.handleListCompanyGardens},
		{method: "GET", path: "/companies/:company_id/gardens/:garden_id", handler: s.handleGetGarden},
		{method: "DELETE", path: "/companies/:company_id/gardens/:garden_id", handler: s.handleDeleteGarden},
	}
}

func (s *Server) handleListGardens(w http.ResponseWriter, r *http.Request) {
	me := currentUser(r)
	page := func(p store.Page) ([]store.Garden, error) { return s.store.GardensVisibleToPage(me.ID, p) }
	if me.SiteAdmin {
		page = s.store.GardensPage
	}
	writeList(s, w, r, page, gardenID)
}

func gardenID(g store.Garden) uint64 { return g.ID }

func (s *Server) handleCreateGarden(w http.ResponseWriter, r *http.Request) {
	c, err := s.adminCompany(r)
	if err == nil {
		err = s.atHome("company", c.ID)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	name, err := decodeName(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	g, err := s.store.CreateGarden(c.ID, name)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusCreated, g)
}

// handleListCompanyGardens lists all gardens of the company for its members, and only
// their own gardens for members of some of its gardens.
func (s *Server) handleListCompanyGardens(w http.ResponseWriter, r *http.Request) {
	c, _, err := s.companyFromPath(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	me := currentUser(r)
	page := func(p store.Page) ([]store.Garden, error) { return s.store.CompanyGardensVisibleToPage(c.ID, me.ID, p) }
	if me.SiteAdmin {
		page = func(p store.Page) ([]store.Garden, error) { return s.store.GardensOfCompanyPage(c.ID, p) }
	}
	writeList(s, w, r, page, gardenID)
}

func (s *Server) handleGetGarden(w http.ResponseWriter, r *http.Request) {
	g, _, err := s.gardenFromPath(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, g)
}

func (s *Server) handleDeleteGarden(w http.ResponseWriter, r *http.Request) {
	g, err := s.adminGarden(r)
	if err == nil {
		err = s.atHome("garden", g.ID)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	removed, err := s.store.DeleteGarden(g.Company, g.ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.afterRemove(r.Context(), removed)
	writeRawJSON(w, http.StatusOK, []byte("{}"))
}

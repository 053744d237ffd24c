package server

import (
	"net/http"

	"github.com/gardend/gardend/store"
)

func (s *Server) companyRoutes() []route {
	return []route{
		{method: "POST", path: "/companies", handler: s.handleCreateCompany},
		{method: "GET", path: "/companies", handler: s.handleListCompanies},
		{method: "GET", path: "/companies/:company_id", handler: s.handleGetCompany},
		{method: "DELETE", path: "/companies/:company_id", handler: s.handleDeleteCompany},
	}
}

// decodeName reads the {name} body of creating a company or garden; the store checks
// the name itself.
func decodeName(r *http.Request) (string, error) {
	var req struct {
		Name *string `json:"name"`
	}
	if err := decodeJSON(r, &req); err != nil {
		return "", err
	}
	if req.Name == nil {
		return "", badRequest("name", "name is required")
	}
	return *req.Name, nil
}

func (s *Server) handleCreateCompany(w http.ResponseWriter, r *http.Request) {
	name, err := decodeName(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	c, err := s.store.CreateCompany(currentUser(r).ID, name)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusCreated, c)
}

func (s *Server) handleListCompanies(w http.ResponseWriter, r *http.Request) {
	me := currentUser(r)
	page := func(p store.Page) ([]store.Company, error) { return s.store.CompaniesOfUserPage(me.ID, p) }
	if me.SiteAdmin {
		page = s.store.CompaniesPage
	}
	writeList(s, w, r, page, func(c store.Company) uint64 { return c.ID })
}

func (s *Server) handleGetCompany(w http.ResponseWriter, r *http.Request) {
	c, _, err := s.companyFromPath(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, c)
}

func (s *Server) handleDeleteCompany(w http.ResponseWriter, r *http.Request) {
	c, err := s.adminCompany(r)
	if err == nil && !s.homeRemoved(c.ID) {
		// The replicas of a removed site may go; nothing else of another site may.
		err = s.atHome("company", c.ID)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	removed, err := s.store.DeleteCompany(c.ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.afterRemove(r.Context(), removed)
	writeRawJSON(w, http.StatusOK, []byte("{}"))
}

package server

import (
	"net/http"

	"github.com/gardend/gardend/store"
)

// Permission endpoints check, in this order (decisions.md): the company or garden is
// visible (404), the caller is an admin there (403), the body is valid (400), the
// target is not the caller (403), the target exists (400), the last company admin
// stays (403). The first two happen here, the rest in the store's transaction.

func (s *Server) permissionRoutes() []route {
	return []route{
		{method: "POST", path: "/companies/:company_id/createPermission", handler: s.handleCreateCompanyPermission},
		{method: "POST", path: "/companies/:company_id/removePermission", handler: s.handleRemoveCompanyPermission},
		{method: "GET", path: "/companies/:company_id/permissions", handler: s.handleListCompanyPermissions},
		{method: "POST", path: "/companies/:company_id/gardens/:garden_id/createPermission", handler: s.handleCreateGardenPermission},
		{method: "POST", path: "/companies/:company_id/gardens/:garden_id/removePermission", handler: s.handleRemoveGardenPermission},
		{method: "GET", path: "/companies/:company_id/gardens/:garden_id/permissions", handler: s.handleListGardenPermissions},
	}
}

// permissionRequest is the body of createPermission and removePermission; missing
// fields arrive as "" and the store rejects them.
type permissionRequest struct {
	Username   string      `json:"username"`
	Permission store.Level `json:"permission"`
}

type removedResult struct {
	Removed bool `json:"removed"`
}

func (s *Server) handleCreateCompanyPermission(w http.ResponseWriter, r *http.Request) {
	var req permissionRequest
	c, err := s.adminCompany(r)
	if err == nil {
		err = decodeJSON(r, &req)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := s.store.SetCompanyPermission(c.ID, currentUser(r).ID, req.Username, req.Permission)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, p)
}

func (s *Server) handleRemoveCompanyPermission(w http.ResponseWriter, r *http.Request) {
	var req permissionRequest
	c, err := s.adminCompany(r)
	if err == nil {
		err = decodeJSON(r, &req)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	removed, err := s.store.RemoveCompanyPermission(c.ID, currentUser(r).ID, req.Username)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, removedResult{Removed: removed})
}

func (s *Server) handleListCompanyPermissions(w http.ResponseWriter, r *http.Request) {
	c, err := s.adminCompany(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	perms, err := s.store.CompanyPermissions(c.ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, perms)
}

func (s *Server) handleCreateGardenPermission(w http.ResponseWriter, r *http.Request) {
	var req permissionRequest
	g, err := s.adminGarden(r)
	if err == nil {
		err = decodeJSON(r, &req)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := s.store.SetGardenPermission(g.ID, currentUser(r).ID, req.Username, req.Permission)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, p)
}

func (s *Server) handleRemoveGardenPermission(w http.ResponseWriter, r *http.Request) {
	var req permissionRequest
	g, err := s.adminGarden(r)
	if err == nil {
		err = decodeJSON(r, &req)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	removed, err := s.store.RemoveGardenPermission(g.ID, currentUser(r).ID, req.Username)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, removedResult{Removed: removed})
}

func (s *Server) handleListGardenPermissions(w http.ResponseWriter, r *http.Request) {
	g, err := s.adminGarden(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	perms, err := s.store.GardenPermissions(g.ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, perms)
}

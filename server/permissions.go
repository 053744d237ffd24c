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
	company, garden := s.companyPermissions(), s.gardenPermissions()
	const c, g = "/companies/:company_id", "/companies/:company_id/gardens/:garden_id"
	return []route{
		{method: "POST", path: c + "/createPermission", handler: s.handleCreatePermission(company)},
		{method: "POST", path: c + "/removePermission", handler: s.handleRemovePermission(company)},
		{method: "GET", path: c + "/permissions", handler: s.handleListPermissions(company)},
		{method: "POST", path: g + "/createPermission", handler: s.handleCreatePermission(garden)},
		{method: "POST", path: g + "/removePermission", handler: s.handleRemovePermission(garden)},
		{method: "GET", path: g + "/permissions", handler: s.handleListPermissions(garden)},
	}
}

// permissionScope binds the permission endpoints to companies or to gardens, so both
// kinds share one implementation of the check order.
type permissionScope struct {
	// kind names the record in a 409 (home.go).
	kind string
	// admin resolves the path and requires the caller to administer it (404, 403).
	admin  func(r *http.Request) (id uint64, err error)
	set    func(id, actorID uint64, username string, l store.Level) (any, error)
	remove func(id, actorID uint64, username string) (bool, error)
	list   func(id uint64, p store.Page) ([]store.Permission, error)
}

func (s *Server) companyPermissions() permissionScope {
	return permissionScope{
		kind: "company",
		admin: func(r *http.Request) (uint64, error) {
			c, err := s.adminCompany(r)
			return c.ID, err
		},
		set: func(id, actor uint64, username string, l store.Level) (any, error) {
			return s.store.SetCompanyPermission(id, actor, username, l)
		},
		remove: s.store.RemoveCompanyPermission,
		list:   s.store.CompanyPermissionsPage,
	}
}

func (s *Server) gardenPermissions() permissionScope {
	return permissionScope{
		kind: "garden",
		admin: func(r *http.Request) (uint64, error) {
			g, err := s.adminGarden(r)
			return g.ID, err
		},
		set: func(id, actor uint64, username string, l store.Level) (any, error) {
			return s.store.SetGardenPermission(id, actor, username, l)
		},
		remove: s.store.RemoveGardenPermission,
		list:   s.store.GardenPermissionsPage,
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

// adminAndBody resolves the scope (404/403), refuses a replica (409), then reads the
// body (400).
func (s *Server) adminAndBody(sc permissionScope, r *http.Request, req *permissionRequest) (uint64, error) {
	id, err := sc.admin(r)
	if err == nil {
		err = s.atHome(sc.kind, id)
	}
	if err != nil {
		return 0, err
	}
	return id, decodeJSON(r, req)
}

func (s *Server) handleCreatePermission(sc permissionScope) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req permissionRequest
		id, err := s.adminAndBody(sc, r, &req)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		p, err := sc.set(id, currentUser(r).ID, req.Username, req.Permission)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		s.writeJSON(w, r, http.StatusCreated, p)
	}
}

func (s *Server) handleRemovePermission(sc permissionScope) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req permissionRequest
		id, err := s.adminAndBody(sc, r, &req)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		removed, err := sc.remove(id, currentUser(r).ID, req.Username)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		s.writeJSON(w, r, http.StatusOK, removedResult{Removed: removed})
	}
}

func (s *Server) handleListPermissions(sc permissionScope) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := sc.admin(r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		page := func(p store.Page) ([]store.Permission, error) { return sc.list(id, p) }
		writeList(s, w, r, page, func(p store.Permission) uint64 { return p.ID })
	}
}

package server

import "net/http"

// The role endpoints tell a client what the caller may do with a company or garden,
// so the web app offers only the actions that will succeed instead of probing with
// requests that fail.

type roleAnswer struct {
	// Role is "admin" or "reader".
	Role string `json:"role"`
}

func roleName(rl role) string {
	if rl >= roleAdmin {
		return "admin"
	}
	return "reader"
}

func (s *Server) handleCompanyRole(w http.ResponseWriter, r *http.Request) {
	_, rl, err := s.companyFromPath(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, roleAnswer{Role: roleName(rl)})
}

func (s *Server) handleGardenRole(w http.ResponseWriter, r *http.Request) {
	_, rl, err := s.gardenFromPath(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, roleAnswer{Role: roleName(rl)})
}

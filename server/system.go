package server

import (
	"net/http"
	"strconv"

	"github.com/gardend/gardend/docs"
)

func (s *Server) systemRoutes() []route {
	return []route{
		{method: "GET", path: "/healthz", handler: s.handleHealth, public: true},
		{method: "GET", path: "/openapi.yaml", handler: handleOpenAPI, public: true},
	}
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	writeRawJSON(w, http.StatusOK, []byte(`{"status":"ok"}`))
}

func handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/yaml; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(docs.OpenAPI)))
	w.Write(docs.OpenAPI)
}

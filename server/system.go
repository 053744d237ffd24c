package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/gardend/gardend/docs"
)

func (s *Server) systemRoutes() []route {
	return []route{
		{method: "GET", path: "/healthz", handler: s.handleHealth, public: true, slot: slotNone},
		{method: "GET", path: "/readyz", handler: s.handleReady, public: true, slot: slotNone},
		{method: "GET", path: "/openapi.yaml", handler: handleOpenAPI, public: true},
	}
}

// handleHealth is liveness: the process serves HTTP. It says nothing about load; a
// supervisor that restarted a busy server would only make things worse.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	writeRawJSON(w, http.StatusOK, []byte(`{"status":"ok"}`))
}

// readyCheck is one condition of readiness. check reports whether it holds and a
// short detail for operators (no secrets: /readyz is public).
type readyCheck struct {
	name  string
	check func(ctx context.Context) (ok bool, detail string)
}

// readyChecks lists what /readyz checks, in the order it reports them.
func (s *Server) readyChecks() []readyCheck {
	return []readyCheck{
		{"requests", s.checkRequestSlots},
		{"connections", s.checkConnections},
	}
}

type readyResult struct {
	Name   string `json:"name"`
	Status string `json:"status"` // "ok" or "fail"
	Detail string `json:"detail"`
}

// handleReady is readiness: 200 when every check holds, else 503, so that a load
// balancer sends new work elsewhere while this server is saturated.
func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	doc := struct {
		Status string        `json:"status"` // "ready" or "unavailable"
		Checks []readyResult `json:"checks"`
	}{Status: "ready"}
	status := http.StatusOK
	for _, c := range s.readyChecks() {
		ok, detail := c.check(r.Context())
		res := readyResult{Name: c.name, Status: "ok", Detail: detail}
		if !ok {
			res.Status, doc.Status, status = "fail", "unavailable", http.StatusServiceUnavailable
		}
		doc.Checks = append(doc.Checks, res)
	}
	body, _ := json.Marshal(doc)
	w.Header()["Cache-Control"] = headerNoStore
	if status != http.StatusOK {
		w.Header().Set("Retry-After", "1")
	}
	writeRawJSON(w, status, body)
}

// checkRequestSlots fails while every request slot is taken: new requests get 503.
func (s *Server) checkRequestSlots(context.Context) (bool, string) {
	used, total := len(s.cap.slots), cap(s.cap.slots)
	return used < total, strconv.Itoa(used) + " of " + strconv.Itoa(total) + " request slots in use"
}

// checkConnections fails while the connection cap is reached and no connection is
// idle: a new connection would be refused.
func (s *Server) checkConnections(context.Context) (bool, string) {
	lim := s.conns.Load()
	if lim == nil {
		return true, "not listening"
	}
	open, full := lim.saturated()
	detail := strconv.Itoa(open) + " of " + strconv.Itoa(lim.max) + " connections open"
	if full {
		detail += ", none idle"
	}
	return !full, detail
}

func handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/yaml; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(docs.OpenAPI)))
	w.Write(docs.OpenAPI)
}

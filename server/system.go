package server

import (
	"context"
	"net/http"
	"strconv"

	"github.com/gardend/gardend/docs"
)

func (s *Server) systemRoutes() []route {
	return []route{
		{method: "GET", path: "/healthz", handler: s.handleHealth, public: true, slot: slotNone},
		{method: "GET", path: "/openapi.yaml", handler: handleOpenAPI, public: true, slot: slotNone},
	}
}

// handleHealth is liveness: the process serves HTTP. It says nothing about load; a
// supervisor that restarted a busy server would only make things worse.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	writeRawJSON(w, http.StatusOK, []byte(`{"status":"ok"}`))
}

// checkRequestSlots fails while every request slot is taken: new requests get 503.
func (s *Server) checkRequestSlots(context.Context) (string, error) {
	used, total := len(s.cap.slots), cap(s.cap.slots)
	detail := strconv.Itoa(used) + " of " + strconv.Itoa(total) + " request slots in use"
	if used >= total {
		return detail, errSaturated
	}
	return detail, nil
}

// checkConnections fails while the connection cap is reached and no connection is
// idle, or while as many HTTP/2 streams are in handlers: a new connection, or a new
// stream, would be refused.
func (s *Server) checkConnections(context.Context) (string, error) {
	lim := s.conns.Load()
	if lim == nil {
		return "not listening", nil
	}
	open, streams, full := lim.saturated()
	detail := strconv.Itoa(open) + " of " + strconv.Itoa(lim.max) + " connections open"
	if streams > 0 {
		detail += ", " + strconv.Itoa(streams) + " HTTP/2 streams in handlers"
	}
	if full {
		return detail + ", none idle", errSaturated
	}
	return detail, nil
}

func handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/yaml; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(docs.OpenAPI)))
	_, _ = w.Write(docs.OpenAPI) // a client gone: nothing left to tell it
}

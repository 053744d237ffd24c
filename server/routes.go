package server

import (
	"net/http"
	"sort"
	"strconv"

	"github.com/julienschmidt/httprouter"
)

// route is one endpoint; the table also feeds the OpenAPI cross-check test.
type route struct {
	method, path string
	handler      http.HandlerFunc
	// public endpoints need no token.
	public bool
	// maxBody overrides Config.MaxBodyBytes (image upload).
	maxBody int64
	// slot is what the handler occupies while it runs (capacity.go).
	slot slotClass
}

func (s *Server) allRoutes() []route {
	var rs []route
	rs = append(rs, s.systemRoutes()...)
	rs = append(rs, s.accountRoutes()...)
	rs = append(rs, s.companyRoutes()...)
	rs = append(rs, s.gardenRoutes()...)
	rs = append(rs, s.permissionRoutes()...)
	rs = append(rs, s.imageRoutes()...)
	rs = append(rs, s.imageTileRoutes()...)
	rs = append(rs, s.bedRoutes()...)
	rs = append(rs, s.backupRoutes()...)
	rs = append(rs, s.webRoutes()...)
	rs = append(rs, s.readinessRoutes()...)
	rs = append(rs, s.sceneRoutes()...)
	rs = append(rs, s.signedPLYRoutes()...)
	rs = append(rs, s.logRoutes()...)
	rs = append(rs, s.photoRoutes()...)
	rs = append(rs, s.exportRoutes()...)
	rs = append(rs, s.historyRoutes()...)
	rs = append(rs, s.alertRoutes()...)
	rs = append(rs, s.guidanceRoutes()...)
	return rs
}

func (s *Server) buildHandler() http.Handler {
	r := httprouter.New()
	// Paths have no trailing slash; redirects would hide client bugs (decisions.md).
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	r.HandleMethodNotAllowed = true
	r.HandleOPTIONS = true
	r.NotFound = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, notFound("no endpoint at "+r.URL.Path))
	})
	r.MethodNotAllowed = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, &apiError{status: http.StatusMethodNotAllowed, detail: r.Method + " is not allowed here; allowed: " + w.Header().Get("Allow")})
	})
	r.PanicHandler = nil // observe() recovers, so the access log sees the 500.
	s.routes = s.allRoutes()
	for _, rt := range s.routes {
		// In order: the body limit and pace, the token (cheap, and it keeps anonymous
		// bodies off protected routes), reading the body, then a request slot.
		var h http.Handler = rt.handler
		if rt.slot == slotRequest {
			h = s.bufferBody(s.requestSlot(h))
		}
		if !rt.public {
			h = s.authed(h.ServeHTTP)
		}
		limit := s.cfg.MaxBodyBytes
		if rt.maxBody > 0 {
			limit = rt.maxBody
		}
		h = s.compressed(rt.method, rt.path, s.limitBody(limit, h))
		r.Handler(rt.method, rt.path, withRoute(s.newRouteTag(rt.method, rt.path), h))
		if rt.method == http.MethodGet {
			r.Handler(http.MethodHead, rt.path, headOnly(withRoute(s.newRouteTag(http.MethodHead, rt.path), h)))
		}
	}
	h := s.observe(s.cors(r))
	if wrapForTest != nil {
		h = wrapForTest(s.cfg.DataDir, h)
	}
	return h
}

// wrapForTest, when set, wraps every Server's handler. Only this package's tests set
// it (openapi_validate_test.go), to hold every response they see against
// docs/openapi.yaml; it stays nil in the binary.
var wrapForTest func(dataDir string, h http.Handler) http.Handler

// RoutePaths lists "METHOD path" of every route, sorted, in OpenAPI path syntax.
func (s *Server) RoutePaths() []string {
	out := make([]string, 0, len(s.routes))
	for _, rt := range s.routes {
		out = append(out, rt.method+" "+openAPIPath(rt.path))
	}
	sort.Strings(out)
	return out
}

// openAPIPath turns httprouter's :name (and catch-all *name) into {name}.
func openAPIPath(p string) string {
	b := []byte(p)
	out := make([]byte, 0, len(b)+4)
	for i := 0; i < len(b); i++ {
		if b[i] != ':' && b[i] != '*' {
			out = append(out, b[i])
			continue
		}
		j := i + 1
		for j < len(b) && b[j] != '/' {
			j++
		}
		out = append(out, '{')
		out = append(out, b[i+1:j]...)
		out = append(out, '}')
		i = j - 1
	}
	return string(out)
}

// pathID reads a positive integer path parameter; anything else is 404 (decisions.md).
func pathID(r *http.Request, name string) (uint64, error) {
	v := httprouter.ParamsFromContext(r.Context()).ByName(name)
	id, err := strconv.ParseUint(v, 10, 64)
	if err != nil || id == 0 || v[0] == '+' || v[0] == '0' {
		return 0, notFound(name + " must be a positive integer id")
	}
	return id, nil
}

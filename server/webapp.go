package server

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/gardend/gardend/server/web"
)

// webRoutes serves the web app (server/web) at / and the endpoints it added to the
// API: the caller's role, the spatial server's projects and a plant's point cloud.
func (s *Server) webRoutes() []route {
	const g = "/companies/:company_id/gardens/:garden_id"
	app, err := web.New(web.Options{RegistrationOpen: s.cfg.Registration != RegistrationClosed})
	if err != nil {
		// Only a binary built without its assets gets here; the API works without them.
		s.log.Error().Err(err).Msg("web app assets unusable; / answers 500")
	}
	return []route{
		{method: "GET", path: "/", handler: s.handleApp(app), public: true, slot: slotNone},
		{method: "GET", path: web.AssetPrefix + ":version/*file", handler: s.handleAppAsset(app), public: true, slot: slotNone},
		{method: "GET", path: "/companies/:company_id/role", handler: s.handleCompanyRole},
		{method: "GET", path: g + "/role", handler: s.handleGardenRole},
		{method: "GET", path: g + "/spatial-projects", handler: s.handleSpatialProjects},
		{method: "GET", path: g + "/beds/:bed_id/plants/:plant_id/pointcloud", handler: s.handlePlantPointCloud},
	}
}

func (s *Server) handleApp(app *web.App) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if app == nil {
			s.writeError(w, r, errNoWebApp)
			return
		}
		app.ServeIndex(w, r)
	}
}

func (s *Server) handleAppAsset(app *web.App) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if app == nil {
			s.writeError(w, r, errNoWebApp)
			return
		}
		p := httprouter.ParamsFromContext(r.Context())
		name := p.ByName("file")
		if len(name) > 0 && name[0] == '/' {
			name = name[1:]
		}
		if !app.ServeAsset(w, r, p.ByName("version"), name) {
			s.writeError(w, r, notFound("no asset "+name+" in this version of the web app; reload the page"))
		}
	}
}

var errNoWebApp = &apiError{status: http.StatusInternalServerError, detail: "the web app is not available in this build"}

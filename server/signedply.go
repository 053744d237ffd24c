package server

import (
	"bytes"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/gardend/gardend/server/pointcloud"
	"github.com/gardend/gardend/spatial/cloud"
	"github.com/gardend/gardend/store"
)

// maxViewerPLYBytes bounds the kept files that are re-encoded for viewers (read whole
// into memory, NaN points dropped); a larger one is sent as it is kept.
const maxViewerPLYBytes = 64 << 20

// signedPLYPath is the path a kept cloud is served at through a signed URL.
func signedPLYPath(project, cloudUUID string) string {
	return "/" + pointcloud.DirName + "/" + project + "/" + cloudUUID + ".ply"
}

// signedPLYRoutes need no token: the URL's signature is the permission.
func (s *Server) signedPLYRoutes() []route {
	return []route{
		{method: "GET", path: "/" + pointcloud.DirName + "/:project/:file", handler: s.handleSignedPLY, public: true},
	}
}

// handleSignedPLY serves a kept point cloud to whoever holds a valid signed URL for
// it: the original PlantMap client's PLY loader sends no token. Browsers of any origin
// may read it (the signature, not the origin, is what is checked). Points without a
// finite x, y and z are left out: the client drops a whole cloud with one NaN in it.
func (s *Server) handleSignedPLY(w http.ResponseWriter, r *http.Request) {
	params := httprouter.ParamsFromContext(r.Context())
	project := params.ByName("project")
	cloudUUID, ok := strings.CutSuffix(params.ByName("file"), ".ply")
	if !ok || !store.ValidUUID(project) || !store.ValidUUID(cloudUUID) {
		s.writeError(w, r, notFound("no point cloud at "+r.URL.Path))
		return
	}
	// Signed URLs are meant for other origins; the answer says so whatever
	// --cors-origins allows for the API. No credentials travel, so "*" is safe.
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Cross-Origin-Resource-Policy", "cross-origin")
	expires, err := s.signer.verify(signedPLYPath(project, cloudUUID), r.URL.Query())
	if err != nil {
		s.writeError(w, r, forbidden(err.Error()))
		return
	}
	f, st, err := s.cloudFiles.Open(project, cloudUUID)
	if errors.Is(err, pointcloud.ErrNotKept) && s.shared != nil && s.clouds != nil {
		// Another node of the cluster handed out the URL and keeps the cloud: fetch it
		// into this node's files too, as the request waits.
		if err = s.clouds.Keep(r.Context(), project, cloudUUID); err == nil {
			f, st, err = s.cloudFiles.Open(project, cloudUUID)
		}
	}
	switch {
	case errors.Is(err, store.ErrInvalid):
		s.writeError(w, r, notFound("no point cloud at "+r.URL.Path))
		return
	case errors.Is(err, pointcloud.ErrNotKept):
		s.writeError(w, r, notFound("the point cloud "+cloudUUID+" of project "+project+" is not kept on this server (any more)"))
		return
	case err != nil:
		s.writeError(w, r, err)
		return
	}
	defer func() { _ = f.Close() }() // read only
	h.Set("Content-Type", pointcloud.ContentType)
	h.Set("Cache-Control", "private, max-age="+strconv.FormatInt(max(0, int64(expires.Sub(s.cfg.Now())/time.Second)), 10))
	if st.Size() > maxViewerPLYBytes {
		http.ServeContent(w, r, "", st.ModTime(), f)
		return
	}
	pc, err := cloud.ReadPLY(f)
	if err == nil {
		pc, err = cloud.FinitePoints(pc)
	}
	var buf bytes.Buffer
	if err == nil {
		buf.Grow(int(st.Size()))
		err = cloud.WritePLY(&buf, pc)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	http.ServeContent(w, r, "", st.ModTime(), bytes.NewReader(buf.Bytes()))
}

package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/gardend/gardend/server/pointcloud"
	"github.com/gardend/gardend/store"
)

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
// The file streams through a small buffer (pointcloud.View) in one of the cloud
// slots (cloudslots.go), at a pace the slot holds it to at the cap; a cloud not kept
// here any more (evicted, or downloaded by another node of a cluster) is fetched
// again as the request waits.
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
	send, release, err := s.takeCloudSlot(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer release()
	// The cloud slot bounds what follows, fetching and sending alike.
	s.releaseSlot(r)
	v, err := s.cloudFiles.OpenView(project, cloudUUID)
	if errors.Is(err, pointcloud.ErrNotKept) {
		if err = s.keepSignedCloud(r.Context(), project, cloudUUID); err == nil {
			v, err = s.cloudFiles.OpenView(project, cloudUUID)
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
	defer func() { _ = v.Close() }() // read only
	h.Set("Content-Type", pointcloud.ContentType)
	h.Set("Cache-Control", "private, max-age="+strconv.FormatInt(max(0, int64(expires.Sub(s.cfg.Now())/time.Second)), 10))
	s.serveCloud(send, r, v)
}

// keepSignedCloud fetches a cloud that a signed URL names into this node's files,
// when a bed still refers to its project: the URL outlives the bed by up to its TTL.
func (s *Server) keepSignedCloud(ctx context.Context, project, cloudUUID string) error {
	if s.clouds == nil {
		return pointcloud.ErrNotKept
	}
	beds, err := s.store.BedsOfProject(project)
	if err != nil {
		return err
	}
	if len(beds) == 0 {
		return pointcloud.ErrNotKept
	}
	return s.keepCloud(ctx, func(ctx context.Context) error { return s.clouds.Keep(ctx, project, cloudUUID) })
}

// cloudKeepWait bounds how long a request waits for a cloud to be fetched again; the
// download goes on without it.
const cloudKeepWait = 20 * time.Second

var errCloudFetching = &apiError{status: http.StatusServiceUnavailable, retryAfter: 5 * time.Second,
	detail: "the point cloud is being fetched from the spatial server; ask again in a few seconds"}

// keepCloud runs fetch (Pool.Keep or Pool.Fetch) for at most cloudKeepWait.
func (s *Server) keepCloud(ctx context.Context, fetch func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, cloudKeepWait)
	defer cancel()
	err := fetch(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		return errCloudFetching
	}
	return err
}

// serveCloud sends a cloud's view; only a view that is the file itself serves ranges.
// A stream that fails half-way (the file damaged or replaced meanwhile) is cut short:
// its status and length are sent by then.
func (s *Server) serveCloud(w http.ResponseWriter, r *http.Request, v *pointcloud.View) {
	if !v.Seekable {
		r.Header.Del("Range")
		r.Header.Del("If-Range")
	}
	rd := &readFailure{ReadSeeker: v}
	http.ServeContent(s.progressive(w), r, "", v.ModTime, rd)
	if rd.err != nil {
		s.log.Warn().Err(rd.err).Str("request_id", requestID(r)).Str("path", r.URL.Path).Msg("point cloud download cut short")
	}
}

// readFailure keeps the first read error other than the end.
type readFailure struct {
	io.ReadSeeker
	err error
}

func (f *readFailure) Read(p []byte) (int, error) {
	n, err := f.ReadSeeker.Read(p)
	if err != nil && err != io.EOF && f.err == nil {
		f.err = err
	}
	return n, err
}

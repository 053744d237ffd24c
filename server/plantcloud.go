package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/julienschmidt/httprouter"

	"github.com/gardend/gardend/server/pointcloud"
	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/store"
)

// handlePlantPointCloud serves the kept PLY file of one plant's point cloud to readers
// of the garden, with the usual token: the web app's 3D view. {plant_id} is the
// plant's id in the plants endpoint (its measurement geometry uuid); the cached
// project details say which cloud belongs to it. A cloud whose position is not
// computed yet is 404 and queued, so asking again shortly finds it; one whose file
// is gone (evicted by --pointcloud-max-bytes, or kept by another node) is fetched
// again as the request waits. The file is sent as kept in one of the cloud slots, at
// a pace the slot holds it to at the cap.
func (s *Server) handlePlantPointCloud(w http.ResponseWriter, r *http.Request) {
	b, bed, err := s.spatialBedFromPath(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	plantID := httprouter.ParamsFromContext(r.Context()).ByName("plant_id")
	var plant *spatial.Plant
	for i := range bed.Plants {
		if bed.Plants[i].ID == plantID {
			plant = &bed.Plants[i]
			break
		}
	}
	what := "plant " + plantID + " of bed " + idText(b.ID)
	switch {
	case plant == nil:
		err = notFound(what + " not found")
	case plant.Cloud == nil:
		err = notFound(what + " has no point cloud on the spatial server")
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	send, release, err := s.takeCloudSlot(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer release()
	s.releaseSlot(r) // the cloud slot bounds what follows
	f, st, err := s.cloudFiles.Open(b.UUID, plant.Cloud.UUID)
	if errors.Is(err, pointcloud.ErrNotKept) {
		// Evicted, downloaded by another node, or never downloaded: the pool knows
		// which, and fetches or queues it.
		if err = s.keepCloud(r.Context(), func(ctx context.Context) error { return s.clouds.Fetch(ctx, bed, plant.Cloud.UUID) }); err == nil {
			f, st, err = s.cloudFiles.Open(b.UUID, plant.Cloud.UUID)
		}
	}
	switch {
	case errors.Is(err, store.ErrInvalid):
		// A uuid unfit for a file name is never downloaded (pointcloud.Inputs).
		s.writeError(w, r, notFound(what+": its point cloud cannot be kept (its uuid is not a plain name)"))
		return
	case errors.Is(err, pointcloud.ErrQueued), errors.Is(err, pointcloud.ErrDownloadFailed), errors.Is(err, pointcloud.ErrNoPosition):
		s.writeError(w, r, notFound(what+": "+err.Error()))
		return
	case errors.Is(err, pointcloud.ErrNotKept):
		s.writeError(w, r, notFound("the point cloud of "+what+" is not kept on this server"))
		return
	case err != nil:
		s.writeError(w, r, err)
		return
	}
	defer func() { _ = f.Close() }() // read only
	h := w.Header()
	if t, ok := mapTransformHeader(plant.Cloud); ok {
		h.Set("Gardend-Transform", t)
	}
	h.Set("Content-Type", pointcloud.ContentType)
	h.Set("Content-Disposition", `inline; filename="`+plant.Cloud.UUID+`.ply"`)
	http.ServeContent(s.progressive(send), r, "", st.ModTime(), f)
}

// mapTransformHeader is the transform from the cloud's frame into its bed's map
// frame as "tx ty tz qx qy qz qw", so a viewer can place the clouds of a bed
// together; ok is false when there is none (a frame other than map without one).
func mapTransformHeader(c *spatial.CloudRef) (string, bool) {
	t := c.Transform
	if t == nil {
		if c.FrameID != spatial.MapFrame {
			return "", false
		}
		t = &spatial.Transform{Rotation: [4]float64{0, 0, 0, 1}}
	}
	var b []byte
	for i, v := range append(t.Translation[:], t.Rotation[:]...) {
		if i > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendFloat(b, v, 'g', -1, 64)
	}
	return string(b), true
}

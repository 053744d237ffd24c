package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/gardend/gardend/imagestore"
	"github.com/gardend/gardend/server/export"
	"github.com/gardend/gardend/store"
)

// Exports of a garden (server/export) for its readers: the beds are read from the
// spatial server while the request holds its slot; then the client paces the stream
// of the file (logs read a page at a time, the picture copied through).

func (s *Server) exportRoutes() []route {
	var rs []route
	for _, f := range export.Files {
		rs = append(rs, route{method: "GET", path: "/companies/:company_id/gardens/:garden_id/export/" + f.Name, handler: s.handleExport(f)})
	}
	return rs
}

func (s *Server) handleExport(f export.File) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		g, _, err := s.gardenFromPath(r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		src := &exportSource{s: s, g: g, r: r}
		if src.beds, err = s.exportBeds(r, g); err != nil {
			s.writeError(w, r, err)
			return
		}
		h := w.Header()
		h.Set("Content-Type", f.ContentType)
		h.Set("Content-Disposition", export.Disposition(g, f.Name))
		h["Cache-Control"] = headerNoStore
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodHead {
			return
		}
		s.releaseSlot(r)
		if err := f.Write(r.Context(), s.progressive(w), src); err != nil {
			// The status is sent: cut the response, so that no client takes a
			// truncated file for a whole one.
			if r.Context().Err() == nil {
				s.log.Error().Err(err).Str("request_id", requestID(r)).Uint64("garden_id", g.ID).Str("file", f.Name).Msg("export failed")
			}
			panic(http.ErrAbortHandler)
		}
	}
}

// exportBeds reads every bed of the garden with its plants (with their kept ids) and
// known positions; a bed the spatial server cannot answer for, or every bed without
// one, carries why. Missing point clouds are queued, as the plants endpoint does.
func (s *Server) exportBeds(r *http.Request, g store.Garden) ([]export.Bed, error) {
	beds, err := s.store.BedsOfGarden(g.ID)
	if err != nil {
		return nil, err
	}
	out := make([]export.Bed, len(beds))
	uuids := make([]string, len(beds))
	for i, b := range beds {
		out[i] = export.Bed{Bed: b, Name: b.Name}
		uuids[i] = b.UUID
	}
	if s.spatial == nil {
		for i := range out {
			out[i].Err = errNoSpatial.Error()
		}
		return out, nil
	}
	var jobs []store.CloudJob
	defer func() { s.clouds.Enqueue(jobs) }()
	for res := range s.spatial.Beds(s.spatialContext(r, g.ID), uuids) {
		b := &out[res.Index]
		if res.Err != nil {
			b.Err = s.bedErrorText(r, b.ID, res.Err)
			continue
		}
		if err := s.keepPlantIDs(&res.Bed); err != nil {
			return nil, err
		}
		s.recordRead(r, b.Bed, &res.Bed)
		coords, bedJobs, err := s.clouds.Coords(res.Bed, false)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, bedJobs...)
		b.Name = bedName(b.Bed, &res.Bed)
		b.Plants = make([]export.Plant, len(res.Bed.Plants))
		for k, p := range res.Bed.Plants {
			b.Plants[k] = export.Plant{Plant: p, Position: coords[k]}
		}
	}
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// exportSource is export.Source on one garden of one request.
type exportSource struct {
	s    *Server
	g    store.Garden
	r    *http.Request
	beds []export.Bed
}

func (x *exportSource) Garden() store.Garden { return x.g }

func (x *exportSource) Beds(context.Context) ([]export.Bed, error) { return x.beds, nil }

// exportPage is how many logs an export reads at a time.
const exportPage = store.MaxLogPage

func (x *exportSource) EachLog(ctx context.Context, fn func(store.Log) error) error {
	f := store.LogFilter{Limit: exportPage}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		page, err := x.s.store.ListLogs(x.g.ID, f)
		if err != nil {
			return err
		}
		for _, l := range page.Logs {
			if err := fn(l); err != nil {
				return err
			}
		}
		if page.Next == nil {
			return nil
		}
		f.After = page.Next
	}
}

func (x *exportSource) Image(ctx context.Context) (io.ReadCloser, store.Coordinates, error) {
	rc, _, cs, err := x.s.openImage(ctx, x.g.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil, export.ErrNoImage
	case errors.Is(err, imagestore.ErrNotFound):
		x.s.log.Warn().Err(err).Uint64("garden_id", x.g.ID).Msg("the garden's image is missing; exported without it")
		return nil, nil, export.ErrNoImage
	}
	return rc, cs, err
}

func (x *exportSource) Now() time.Time { return x.s.cfg.Now() }

package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/gardend/gardend/imagestore"
	"github.com/gardend/gardend/store"
)

// ImageDirName is the directory of garden images inside the data directory.
const ImageDirName = "images"

func (s *Server) imageRoutes() []route {
	return []route{
		{method: "POST", path: "/companies/:company_id/gardens/:garden_id/image", handler: s.handleUploadImage, maxBody: s.cfg.MaxImageBytes},
		{method: "GET", path: "/companies/:company_id/gardens/:garden_id/image", handler: s.handleGetImage},
	}
}

type imageUpload struct {
	Image       *string         `json:"image"`
	Coordinates json.RawMessage `json:"coordinates"`
}

type imageUploaded struct {
	ImagePath   string            `json:"image_path"`
	Width       int               `json:"width"`
	Height      int               `json:"height"`
	Coordinates store.Coordinates `json:"coordinates"`
}

// handleUploadImage replaces the garden's image and coordinates. The order makes a
// crash at any point harmless: the file is written and synced under a new name, then
// one transaction points the garden at it, then the old file goes. A crash before the
// commit leaves an unreferenced file and one after it an old file; the start-up sweep
// deletes both.
func (s *Server) handleUploadImage(w http.ResponseWriter, r *http.Request) {
	g, err := s.adminGarden(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req imageUpload
	if err := decodeJSON(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Image == nil {
		s.writeError(w, r, badRequest("image", "image is required: "+imagestore.DataURLPrefix+"<base64 PNG>"))
		return
	}
	coords, err := store.ParseCoordinates(req.Coordinates)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	data, err := imagestore.DecodeDataURL(*req.Image)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	up, err := s.replaceGardenImage(r.Context(), g.ID, data, coords)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusCreated, up)
}

// replaceGardenImage checks a PNG and makes it the garden's image with coords: the
// upload's path, which demo seeding shares.
func (s *Server) replaceGardenImage(ctx context.Context, gardenID uint64, data []byte, coords store.Coordinates) (imageUploaded, error) {
	width, height, err := imagestore.CheckPNG(data)
	if err != nil {
		return imageUploaded{}, err
	}
	rel, err := s.images.Put(data)
	if err != nil {
		return imageUploaded{}, err
	}
	old, err := s.store.SetGardenImage(gardenID, rel, coords)
	if err != nil {
		// The record still points at the old image; the new file must not stay.
		if rmErr := s.images.Remove(rel); rmErr != nil {
			s.log.Error().Err(rmErr).Str("image_path", rel).Msg("remove image of a failed upload; the next start-up sweep deletes it")
		}
		return imageUploaded{}, err
	}
	if old != "" {
		s.afterRemove(ctx, store.Removed{ImagePaths: []string{old}})
	}
	return imageUploaded{ImagePath: rel, Width: width, Height: height, Coordinates: coords}, nil
}

// handleGetImage streams {"image": "<data URL>", "coordinates": [...]} with the file
// encoded on the fly, so the image is never held in memory.
func (s *Server) handleGetImage(w http.ResponseWriter, r *http.Request) {
	g, _, err := s.gardenFromPath(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	f, size, coords, err := s.openImage(g.ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer f.Close()
	tail, err := json.Marshal(coords)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	const head, mid = `{"image":"`, `","coordinates":`
	h := w.Header()
	h["Content-Type"] = headerJSON
	h.Set("Content-Length", strconv.FormatInt(int64(len(head))+imagestore.EncodedLen(size)+int64(len(mid)+len(tail)+1), 10))
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, head)
	if err := imagestore.WriteDataURL(w, f); err != nil {
		// The status is sent: cut the response short rather than end it as valid JSON.
		s.log.Warn().Err(err).Str("request_id", requestID(r)).Uint64("garden_id", g.ID).Msg("image download interrupted")
		panic(http.ErrAbortHandler)
	}
	io.WriteString(w, mid)
	w.Write(append(tail, '}'))
}

// openImage opens the garden's image with the coordinates of the same upload. An
// upload running at the same time may delete the file between reading the record and
// opening it; reading the record again then finds the new one.
func (s *Server) openImage(gardenID uint64) (io.ReadCloser, int64, store.Coordinates, error) {
	for attempt := 1; ; attempt++ {
		rel, coords, err := s.store.GardenImage(gardenID)
		if err != nil {
			return nil, 0, nil, err
		}
		f, size, err := s.images.Open(rel)
		if errors.Is(err, imagestore.ErrNotFound) && attempt < 3 {
			continue
		}
		return f, size, coords, err
	}
}

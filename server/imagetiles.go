package server

import (
	"context"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/gardend/gardend/imagestore/pyramid"
	"github.com/gardend/gardend/server/tiles"
	"github.com/gardend/gardend/store"
)

// A garden's picture for a slow link: its thumbnail, preview and tiles
// (server/tiles builds them in the background), served immutable under URLs that
// name the picture's digest (?v=), and what a client needs to place them (info).

func (s *Server) imageTileRoutes() []route {
	const base = "/companies/:company_id/gardens/:garden_id/image/"
	return []route{
		{method: "GET", path: base + "info", handler: s.handleImageInfo},
		{method: "GET", path: base + "thumb", handler: s.handleImageThumb},
		{method: "GET", path: base + "preview", handler: s.handleImagePreview},
		{method: "GET", path: base + "tiles/:z/:x/:y", handler: s.handleImageTile},
	}
}

// openTiles makes the tile manager: eager with a store of the node's own, a cache
// built on demand with a shared one.
func (s *Server) openTiles() (*tiles.Manager, error) {
	cfg := s.cfg.Tiles
	cfg.MaxPixels = s.cfg.MaxImagePixels
	m, err := tiles.New(s.cfg.DataDir, cfg, tileSource{s}, s.log)
	if err != nil {
		return nil, err
	}
	s.tiles = m
	s.sweepTiles(true)
	if s.shared == nil {
		if err := m.QueueMissing(); err != nil {
			s.log.Error().Err(err).Msg("list the pictures to tile; each is tiled when first asked for")
		}
	}
	return m, nil
}

// tileSource gives the tile manager the pictures.
type tileSource struct{ s *Server }

func (t tileSource) ImagePaths() (map[string]bool, error) { return t.s.store.ImagePaths() }

func (t tileSource) OpenImage(ctx context.Context, path string) (io.ReadCloser, int64, error) {
	return t.s.images.OpenImage(ctx, path)
}

// sweepTiles deletes the tile files of pictures no garden shows (and at start-up the
// leftovers of interrupted builds). Failures are only logged: they are a cache's.
func (s *Server) sweepTiles(startup bool) {
	n, err := s.tiles.Sweep(startup)
	if err != nil {
		s.log.Warn().Err(err).Msg("sweep tile files")
	}
	if n > 0 {
		s.log.Info().Int("files", n).Msg("swept tile files of pictures no garden shows")
	}
}

// checkImageSize refuses a picture the tiles could not be built of, from its header.
func (s *Server) checkImageSize(width, height int) error {
	if px := int64(width) * int64(height); px > s.cfg.MaxImagePixels {
		return badRequest("image", fmt.Sprintf("the picture has %d × %d = %s; this server accepts at most %s (--max-image-pixels)",
			width, height, pyramid.Pixels(px), pyramid.Pixels(s.cfg.MaxImagePixels)))
	}
	if max(width, height) > pyramid.DefaultMaxSide {
		return badRequest("image", fmt.Sprintf("the picture is %d × %d pixels; a side may be at most %d pixels", width, height, pyramid.DefaultMaxSide))
	}
	return nil
}

// imageInfo is GET …/image/info.
type imageInfo struct {
	Width    int `json:"width"`
	Height   int `json:"height"`
	Levels   int `json:"levels"`
	TileSize int `json:"tile_size"`
	// Version names the pyramid in ?v=; null until it is ready.
	Version *string `json:"version"`
	Ready   bool    `json:"ready"`
	State   string  `json:"state"`
	// Progress is the share of the picture read, while building.
	Progress *float64 `json:"progress,omitempty"`
	Error    string   `json:"error,omitempty"`
	// Thumb and Preview are their sizes once ready; Preview.Level is the level it
	// equals (a client needs no tiles at or below it).
	Thumb   *imageSize        `json:"thumb"`
	Preview *previewSize      `json:"preview"`
	Corners store.Coordinates `json:"corners"`
}

type imageSize struct {
	Width  int `json:"width"`
	Height int `json:"height"`
}

type previewSize struct {
	imageSize
	Level int `json:"level"`
}

// handleImageInfo says how big the picture is, how its pyramid is laid out and
// whether it is ready, with the coordinates that place it. It is never cached: it
// is what names the current version.
func (s *Server) handleImageInfo(w http.ResponseWriter, r *http.Request) {
	g, _, err := s.gardenFromPath(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	path, coords, err := s.store.GardenImage(g.ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	py, st, err := s.tiles.Get(path)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	info := imageInfo{State: string(st.State), Error: st.Err, Corners: coords}
	if py != nil {
		defer func() { _ = py.Close() }() // read only
		in := py.Info
		v := py.Version()
		info.Width, info.Height, info.Levels, info.TileSize, info.Version, info.Ready = in.Width, in.Height, in.Levels, in.TileSize, &v, true
		info.Thumb = &imageSize{in.ThumbWidth, in.ThumbHeight}
		info.Preview = &previewSize{imageSize{in.PreviewWidth, in.PreviewHeight}, in.PreviewLevel}
	} else {
		width, height, err := s.imageHeader(r.Context(), path)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		l := pyramid.NewLayout(width, height, pyramid.DefaultTileSize)
		info.Width, info.Height, info.Levels, info.TileSize = width, height, l.Levels, l.TileSize
		if st.State == tiles.Building {
			info.Progress = &st.Progress
		}
	}
	w.Header()["Cache-Control"] = headerNoStore
	s.writeJSON(w, r, http.StatusOK, info)
}

// imageHeader reads the picture's size from its PNG header.
func (s *Server) imageHeader(ctx context.Context, path string) (int, int, error) {
	rc, _, err := s.images.OpenImage(ctx, path)
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = rc.Close() }() // read only
	cfg, err := png.DecodeConfig(io.LimitReader(rc, 1<<20))
	if err != nil {
		return 0, 0, fmt.Errorf("the header of image %s: %w", path, err) // checked when stored: ours
	}
	return cfg.Width, cfg.Height, nil
}

// tilesRetry is the Retry-After of a picture being tiled.
const tilesRetry = 2 * time.Second

// gardenPyramid opens the pyramid of the garden's picture; without an error and
// without a pyramid, st says why there is none (yet).
func (s *Server) gardenPyramid(r *http.Request) (*tiles.Pyramid, store.Garden, tiles.Status, error) {
	g, _, err := s.gardenFromPath(r)
	if err != nil {
		return nil, g, tiles.Status{}, err
	}
	if g.ImagePath == nil {
		return nil, g, tiles.Status{}, store.NoImage(g.ID)
	}
	py, st, err := s.tiles.Get(*g.ImagePath)
	return py, g, st, err
}

// notTiled answers for a pyramid not there: 503 while it is being built, 404 when it
// cannot be.
func notTiled(st tiles.Status) error {
	if st.State == tiles.Failed {
		return &apiError{status: http.StatusNotFound, detail: "the garden's picture has no tiles: " + st.Err + "; GET …/image serves it whole"}
	}
	detail := "the garden's picture is queued for tiling"
	if st.State == tiles.Building {
		detail = fmt.Sprintf("the garden's picture is being tiled (%.0f%% read)", 100*st.Progress)
	}
	return &apiError{status: http.StatusServiceUnavailable, retryAfter: tilesRetry, detail: detail + "; GET …/image/info says when it is ready"}
}

// handleImageThumb serves the thumbnail (at most 320 pixels on the longer side).
func (s *Server) handleImageThumb(w http.ResponseWriter, r *http.Request) {
	py, _, st, err := s.gardenPyramid(r)
	if err == nil && py == nil {
		err = notTiled(st)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer func() { _ = py.Close() }() // read only
	b, err := py.Thumb()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.serveBlob(w, r, py, b, "thumb")
}

// handleImagePreview serves the preview (at most 1600 pixels on the longer side);
// while it is being built, or when it cannot be, the whole picture.
func (s *Server) handleImagePreview(w http.ResponseWriter, r *http.Request) {
	py, g, _, err := s.gardenPyramid(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if py == nil {
		s.serveWholeImage(w, r, g.ID)
		return
	}
	defer func() { _ = py.Close() }() // read only
	b, err := py.Preview()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.serveBlob(w, r, py, b, "preview")
}

// serveWholeImage streams the stored PNG as it is, uncached (a preview stands in for
// it once built).
func (s *Server) serveWholeImage(w http.ResponseWriter, r *http.Request, gardenID uint64) {
	f, size, _, err := s.openImage(r.Context(), gardenID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer func() { _ = f.Close() }() // read only
	h := w.Header()
	h.Set("Content-Type", "image/png")
	h.Set("Content-Length", strconv.FormatInt(size, 10))
	h["Cache-Control"] = headerNoStore
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	// What is left is the client's to pace: it holds its connection, not a slot.
	s.releaseSlot(r)
	if _, err := io.Copy(s.progressive(w), f); err != nil {
		s.log.Warn().Err(err).Str("request_id", requestID(r)).Uint64("garden_id", gardenID).Msg("picture download interrupted")
		panic(http.ErrAbortHandler)
	}
}

// handleImageTile serves tile x, y of level z.
func (s *Server) handleImageTile(w http.ResponseWriter, r *http.Request) {
	z, okz := tileCoord(r, "z")
	x, okx := tileCoord(r, "x")
	y, oky := tileCoord(r, "y")
	py, _, st, err := s.gardenPyramid(r)
	if err == nil && py == nil {
		err = notTiled(st)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer func() { _ = py.Close() }() // read only
	b, ok, err := py.Tile(z, x, y)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !okz || !okx || !oky || !ok {
		l := py.Info.Layout
		detail := fmt.Sprintf("no tile %s/%s/%s: the levels are 0 to %d", paramText(r, "z"), paramText(r, "x"), paramText(r, "y"), l.Levels-1)
		if okz && z < l.Levels {
			c, rows := l.Grid(z)
			detail = fmt.Sprintf("no tile %d/%s/%s: level %d has %d × %d tiles", z, paramText(r, "x"), paramText(r, "y"), z, c, rows)
		}
		s.writeError(w, r, notFound(detail))
		return
	}
	// A tile of another picture drawn where the page placed the old one's would be
	// garbage: a page opened before a new upload keeps its preview instead.
	if v := r.URL.Query().Get("v"); v != "" && v != py.Version() {
		s.writeError(w, r, notFound(fmt.Sprintf("no tile %d/%d/%d of the version this URL names: the picture has changed; …/image/info names the current one", z, x, y)))
		return
	}
	s.serveBlob(w, r, py, b, fmt.Sprintf("%d.%d.%d", z, x, y))
}

// tileCoord reads a tile coordinate: a decimal number without sign or leading zero.
func tileCoord(r *http.Request, name string) (int, bool) {
	v := paramValue(r, name)
	if v == "" || len(v) > 7 || (len(v) > 1 && v[0] == '0') || strings.Trim(v, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	return n, err == nil
}

func paramValue(r *http.Request, name string) string {
	return httprouter.ParamsFromContext(r.Context()).ByName(name)
}

// paramText is a path parameter for a message, cut short.
func paramText(r *http.Request, name string) string {
	v := paramValue(r, name)
	if len(v) > 12 || strings.Trim(v, "0123456789") != "" {
		return "?"
	}
	return v
}

// immutable is the Cache-Control of a response whose URL names its version.
const immutable = "private, max-age=31536000, immutable"

// serveBlob sends one image of the pack with its validators: ETag from the version,
// immutable when the URL's ?v= names that version, revalidated otherwise (a client
// holding an older version's URL gets the current bytes, never cached for good).
func (s *Server) serveBlob(w http.ResponseWriter, r *http.Request, py *tiles.Pyramid, b pyramid.Blob, part string) {
	version := py.Version()
	etag := `"` + version + "." + part + `"`
	h := w.Header()
	h.Set("ETag", etag)
	if r.URL.Query().Get("v") == version {
		h.Set("Cache-Control", immutable)
	} else {
		h.Set("Cache-Control", "private, no-cache")
	}
	if etagMatches(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", b.Format.ContentType())
	h.Set("Content-Length", strconv.FormatInt(b.Length, 10))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	if _, err := io.Copy(s.progressive(w), py.Open(b)); err != nil {
		s.log.Warn().Err(err).Str("request_id", requestID(r)).Msg("tile download interrupted")
		panic(http.ErrAbortHandler)
	}
}

// etagMatches is If-None-Match's weak comparison against etag.
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}

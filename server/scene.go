package server

import (
	"math"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/gardend/gardend/spatial"
)

// The 3D scene of a bed, as the original PlantMap client asks for it
// (shared/spec/plantmap-client.md): one entry per plant whose point cloud is kept,
// placed at the mean of its cloud's points, with a signed URL to the cloud. The
// original answered GET and POST (its client POSTs an empty object) without any
// authentication; gardend needs the usual token and read access to the garden.

func (s *Server) sceneRoutes() []route {
	// The trailing slash is part of the path, as the client calls it.
	const path = "/companies/:company_id/gardens/:garden_id/beds/:bed_id/3d-scene/"
	return []route{
		{method: "GET", path: path, handler: s.handleScene},
		{method: "POST", path: path, handler: s.handleScene},
	}
}

type scenePosition struct {
	X string `json:"x"`
	Y string `json:"y"`
	Z string `json:"z"`
}

type sceneHealth struct {
	Type     string `json:"type"`
	Loglevel int64  `json:"loglevel"`
	Shortcut string `json:"shortcut"`
}

type scenePlant struct {
	GeometryUUID        string        `json:"geometryUUID"`
	MeasurementUUID     string        `json:"measurementUUID"`
	URL                 string        `json:"url"`
	Name                string        `json:"name"`
	LocationDescription uint64        `json:"locationDescription"`
	Type                string        `json:"type"`
	Position            scenePosition `json:"position"`
	Health              []sceneHealth `json:"health"`
	// Yield is the plant's approx_yield, or "" without one, as the original sent it.
	Yield    any    `json:"yield"`
	Status   string `json:"status"`
	Harvest  string `json:"harvest"`
	Progress string `json:"progress"`
}

type sceneJSON struct {
	Plants []scenePlant `json:"plants"`
	Global struct {
		Position scenePosition `json:"position"`
	} `json:"global"`
}

func (s *Server) handleScene(w http.ResponseWriter, r *http.Request) {
	b, bed, err := s.spatialBedFromPath(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// Clouds not downloaded yet are queued as for the plants listing; they join the
	// scene once kept.
	_, jobs, err := s.clouds.Coords(bed, false)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.clouds.Enqueue(jobs)
	now := s.cfg.Now()
	base := s.baseURL(r)
	out := sceneJSON{Plants: []scenePlant{}}
	var sum [3]float64
	for _, p := range bed.Plants {
		if p.Cloud == nil {
			continue
		}
		mean, ok := s.cloudFiles.Centre(bed.ProjectUUID, p.Cloud.UUID)
		if !ok {
			continue
		}
		for k := range sum {
			sum[k] += mean[k]
		}
		signed, _ := s.signer.sign(signedPLYPath(bed.ProjectUUID, p.Cloud.UUID))
		out.Plants = append(out.Plants, newScenePlant(b.ID, p, mean, base+signed, now))
	}
	// Without plants the scene is centred on its frame's origin.
	var centre [3]float64
	if n := float64(len(out.Plants)); n > 0 {
		for k := range centre {
			centre[k] = sum[k] / n
		}
	}
	out.Global.Position = newScenePosition(centre)
	// Clouds whose position is computed but whose file is not here (evicted by
	// --pointcloud-max-bytes, or downloaded by another node of a cluster) are
	// fetched again: they join the scene then, as clouds not downloaded yet do.
	if gone, err := s.clouds.Evicted(bed); err != nil {
		s.log.Warn().Err(err).Str("request_id", requestID(r)).Str("project", bed.ProjectUUID).Msg("read plant positions")
	} else {
		s.clouds.Refill(bed.ProjectUUID, gone)
	}
	w.Header()["Cache-Control"] = headerNoStore // the body holds signed URLs
	s.writeJSON(w, r, http.StatusOK, out)
}

func newScenePlant(bedID uint64, p spatial.Plant, mean [3]float64, url string, now time.Time) scenePlant {
	sum := spatial.PlantSummary(p, now)
	sp := scenePlant{
		GeometryUUID: p.Cloud.UUID, MeasurementUUID: p.Measurement, URL: url, Name: p.Name,
		LocationDescription: bedID, Type: p.Species, Position: newScenePosition(mean),
		Health: []sceneHealth{}, Yield: "", Status: p.Status,
	}
	for _, h := range sum.Health {
		first, _ := utf8.DecodeRuneInString(h.Type)
		sp.Health = append(sp.Health, sceneHealth{Type: h.Type, Loglevel: h.Level, Shortcut: string(first)})
	}
	if sum.Yield != nil {
		sp.Yield = *sum.Yield
	}
	// Whole weeks left, truncated as the original did (the beds' "week" text rounds).
	if d, ok := spatial.RemainingToHarvest(p, now); ok {
		sp.Harvest = strconv.FormatInt(int64(d/(7*24*time.Hour)), 10) + " Weeks"
	}
	if g := p.GrowthState; g != nil && !math.IsNaN(*g) && !math.IsInf(*g, 0) {
		sp.Progress = strconv.FormatFloat(*g, 'f', -1, 64)
	}
	return sp
}

func newScenePosition(v [3]float64) scenePosition {
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	return scenePosition{X: f(v[0]), Y: f(v[1]), Z: f(v[2])}
}

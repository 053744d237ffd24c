package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gardend/gardend/server/pointcloud"
	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/demo"
	"github.com/gardend/gardend/store"
)

// errNoSpatial: the beds and plants endpoints need a spatial data server and none is
// configured.
var errNoSpatial = errors.New("no spatial data server configured")

// demoSpatial is the in-process demo spatial server of Config.Demo.
type demoSpatial struct {
	data *demo.Dataset
	srv  *demo.Server
	// sim is the robot scanning it over time (HistoryConfig.DemoScanInterval).
	sim *demo.Simulation
}

// openSpatial starts the demo spatial server when asked and dials the client; without
// an address the spatial endpoints stay off (503).
func (s *Server) openSpatial() error {
	if s.cfg.Demo {
		if s.cfg.Spatial.Addr != "" {
			s.log.Warn().Str("spatial", s.cfg.Spatial.Addr).Msg("--demo runs its own spatial server; ignoring --spatial")
		}
		ds := demo.Generate(demo.Options{})
		srv := demo.NewServer(ds, demo.ServerOptions{Latency: s.cfg.DemoLatency})
		addr, err := srv.Start("127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("start the demo spatial server: %w", err)
		}
		s.demo = &demoSpatial{data: ds, srv: srv, sim: demo.NewSimulation(ds)}
		if s.cfg.History.withDefaults().DemoScanInterval > 0 {
			// The robot's scan of now, before anyone reads: what history is seeded
			// up to (seedDemoHistory).
			for _, b := range s.demo.sim.Scan(s.cfg.Now()) {
				srv.SetBed(b)
			}
		}
		s.cfg.Spatial.Addr, s.cfg.Spatial.TLS, s.cfg.Spatial.CAFile = addr, false, ""
		s.log.Info().Str("addr", addr).Dur("latency", s.cfg.DemoLatency).Int("beds", len(ds.Beds)).Msg("demo spatial server listening")
	}
	if s.cfg.Spatial.Addr == "" {
		return nil
	}
	c, err := spatial.Dial(s.cfg.Spatial, s.log)
	if err != nil {
		return err
	}
	s.log.Info().Str("spatial", c.Addr()).Bool("tls", s.cfg.Spatial.TLS).Msg("spatial data server")
	s.spatial = c
	s.clouds = pointcloud.NewPool(s.store, c, s.cloudFiles, s.cfg.Clouds, s.cfg.Now, s.log)
	return nil
}

// SpatialStats are the spatial client's counters; ok is false without a client.
func (s *Server) SpatialStats() (st spatial.ClientStats, ok bool) {
	if s.spatial == nil {
		return spatial.ClientStats{}, false
	}
	return s.spatial.Stats(), true
}

// ResetSpatialCache drops the spatial client's cached answers (benchmarks of cold
// fetches).
func (s *Server) ResetSpatialCache() {
	if s.spatial != nil {
		s.spatial.ResetCache()
	}
}

// WaitCloudsIdle blocks until the download queue holds no job but those marked
// failed (none due, backing off or in progress), or ctx ends. The pool runs in Run;
// tests use this instead of sleeping.
func (s *Server) WaitCloudsIdle(ctx context.Context) error {
	if s.clouds == nil {
		return errNoSpatial
	}
	return s.clouds.WaitIdle(ctx)
}

// spatialProbeTimeout bounds the start-up check that the spatial server can be reached.
const spatialProbeTimeout = 5 * time.Second

// probeSpatial checks once, at start, that the spatial server can be reached, and
// warns when it cannot: beds and plants answer 502 until it can. It only logs.
func (s *Server) probeSpatial(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, spatialProbeTimeout)
	defer cancel()
	if err := s.spatial.Probe(ctx); err != nil {
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled) {
			return // shutting down
		}
		s.spatialDown.Store(true) // checkSpatial logs when it is back
		s.log.Warn().Str("spatial", s.spatial.Addr()).Err(err).
			Msg("the spatial data server cannot be reached; beds and plants answer 502 until it can")
		return
	}
	s.log.Info().Str("spatial", s.spatial.Addr()).Msg("spatial data server reachable")
}

// spatialContext is r's context with what the spatial client knows of the caller: the
// request id for its log lines, and the garden whose share of the call slots the
// request's calls draw from (one garden's listing cannot starve another's).
func (s *Server) spatialContext(r *http.Request, gardenID uint64) context.Context {
	return spatial.WithCaller(r.Context(), spatial.Caller{RequestID: requestID(r), Share: "garden " + idText(gardenID)})
}

// spatialBedFromPath resolves the path's bed for a reader of its garden and reads it
// from the spatial server, drawing on the garden's share of the call slots; its
// plants carry the ids gardend keeps for them (keepPlantIDs).
func (s *Server) spatialBedFromPath(r *http.Request) (store.Bed, spatial.Bed, error) {
	_, b, _, err := s.bedFromPath(r)
	if err == nil && s.spatial == nil {
		err = errNoSpatial
	}
	if err != nil {
		return b, spatial.Bed{}, err
	}
	bed, err := s.spatial.Bed(s.spatialContext(r, b.Garden), b.UUID)
	if err == nil {
		err = s.keepPlantIDs(&bed)
	}
	if err == nil {
		s.recordRead(r, b, &bed)
	}
	return b, bed, err
}

// bedErrorText is what a client learns of a bed the spatial server could not answer
// for: a CallError's fixed text, never the server's own words. Anything else is
// logged and answered with a generic text.
func (s *Server) bedErrorText(r *http.Request, bedID uint64, err error) string {
	var ce *spatial.CallError
	switch {
	case errors.As(err, &ce):
		return ce.Error()
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "the request ended before the bed was read"
	}
	s.log.Error().Err(err).Str("request_id", requestID(r)).Uint64("bed_id", bedID).Msg("read bed")
	return "could not read the bed; the server log has the details"
}

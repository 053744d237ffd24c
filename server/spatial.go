package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/demo"
	"github.com/gardend/gardend/store"
)

// errNoSpatial: the beds and plants endpoints need a spatial data server and none is
// configured.
var errNoSpatial = errors.New("no spatial data server configured")

// CloudConfig tunes the background point-cloud downloads. Zero values take defaults.
type CloudConfig struct {
	// Workers is the number of downloads at once. Default 2: clouds are large and the
	// uplink may be thin; requests never wait for them.
	Workers int
	// Retry is the backoff of failed downloads. Default: 8 attempts, 2 s doubling up
	// to 10 min (about 8.5 min from the first failure to giving up).
	Retry store.RetryPolicy
	// Rearm is how long a download that ran out of attempts stays failed before a
	// request for its bed queues it again. Default 1 h.
	Rearm time.Duration
	// MaxBytes bounds the PLY files kept under pointclouds/; the least recently used
	// are deleted beyond it (positions stay). 0: no limit.
	MaxBytes int64
}

// Defaults of CloudConfig.
const (
	DefaultCloudWorkers = 2
	defaultCloudRearm   = time.Hour
)

var defaultRetry = store.RetryPolicy{MaxAttempts: 8, Backoff: 2 * time.Second, MaxBackoff: 10 * time.Minute}

func (c *CloudConfig) setDefaults() {
	if c.Workers <= 0 {
		c.Workers = DefaultCloudWorkers
	}
	if c.Retry.MaxAttempts <= 0 {
		c.Retry.MaxAttempts = defaultRetry.MaxAttempts
	}
	if c.Retry.Backoff <= 0 {
		c.Retry.Backoff = defaultRetry.Backoff
	}
	if c.Retry.MaxBackoff < c.Retry.Backoff {
		c.Retry.MaxBackoff = max(defaultRetry.MaxBackoff, c.Retry.Backoff)
	}
	if c.Rearm <= 0 {
		c.Rearm = defaultCloudRearm
	}
}

// demoSpatial is the in-process demo spatial server of Config.Demo.
type demoSpatial struct {
	data *demo.Dataset
	srv  *demo.Server
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
		s.demo = &demoSpatial{data: ds, srv: srv}
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
	s.clouds = newCloudPool(s.store, c, filepath.Join(s.cfg.DataDir, PointCloudDirName), s.cfg.Clouds, s.cfg.Now, s.log)
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
	return s.clouds.waitIdle(ctx)
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

package server

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// HTTP server defaults. The read and write timeouts leave room for a 64 MiB image over
// a slow farm uplink; the others only have to outlast well-behaved clients.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 2 * time.Minute
	DefaultWriteTimeout      = 2 * time.Minute
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultMaxHeaderBytes    = 64 << 10
	DefaultMaxConcurrent     = 512
	// A body may take DefaultBodyTimeout plus a second per DefaultBodyMinRate bytes:
	// a 1 KiB login 10 s, a 64 MiB image 68 min (--read-timeout caps it first).
	DefaultBodyTimeout = 10 * time.Second
	DefaultBodyMinRate = 16 << 10
	// DefaultBodyBufferBytes bounds the JSON bodies read ahead of a request slot:
	// 64 bodies at the 1 MiB limit, thousands of ordinary ones.
	DefaultBodyBufferBytes = 64 << 20
	// DefaultMaxUploads: an upload costs little memory (it streams to disk) but a
	// 64 MiB temporary file and disk bandwidth.
	DefaultMaxUploads = 4
	// An idle connection costs about 35 KiB of resident memory, one in the middle of
	// a 60 KiB header block about 150 KiB; at most a quarter may be unfinished, so
	// 1024 connections stay near 100 MiB whatever clients send (BenchmarkIdle-
	// ConnectionsRSS, BenchmarkUnfinishedHeadersRSS). One address gets an eighth of
	// them, plenty for an office behind one NAT address.
	DefaultMaxConns        = 1024
	DefaultMaxConnsPerAddr = 128
	// MaxStreamsPerConn is how many requests an HTTP/2 connection may have open at
	// once (net/http's default is 250). Each one that waits (a body that does not
	// come, an answer the client does not read) costs about 15 KiB and is bounded by
	// no connection cap but this one: at 250, 1024 connections could pin 3.6 GiB for
	// a few bytes of headers each. 16 keeps that near 230 MiB and is more than the web
	// app asks at once; browsers queue the rest.
	MaxStreamsPerConn = 16
)

// setFieldDefaults fills the hardening fields of Config (called by setDefaults).
func (c *Config) setFieldDefaults() {
	if c.LoginFailLimit <= 0 {
		c.LoginFailLimit = DefaultLoginFailLimit
	}
	if c.LoginFailWindow <= 0 {
		c.LoginFailWindow = DefaultLoginFailWindow
	}
	if c.Registration == "" {
		c.Registration = RegistrationOpen
	}
	if c.ReadHeaderTimeout <= 0 {
		c.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if c.ReadTimeout <= 0 {
		c.ReadTimeout = DefaultReadTimeout
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.MaxHeaderBytes <= 0 {
		c.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if c.MaxConcurrent <= 0 {
		c.MaxConcurrent = DefaultMaxConcurrent
	}
	if c.BodyTimeout <= 0 {
		c.BodyTimeout = DefaultBodyTimeout
	}
	if c.BodyMinRate <= 0 {
		c.BodyMinRate = DefaultBodyMinRate
	}
	if c.BodyBufferBytes <= 0 {
		// Room for a few bodies at the limit, if an operator raised it.
		c.BodyBufferBytes = max(DefaultBodyBufferBytes, 4*c.MaxBodyBytes)
	}
	if c.MaxUploads <= 0 {
		c.MaxUploads = DefaultMaxUploads
	}
	if c.MaxConns <= 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.MaxConnsPerAddr <= 0 {
		c.MaxConnsPerAddr = DefaultMaxConnsPerAddr
	}
}

// newHTTPServer applies the configured timeouts and limits (and TLS) to h.
func (s *Server) newHTTPServer(ctx context.Context, h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    s.cfg.MaxHeaderBytes,
		TLSConfig:         s.tlsConfig.Clone(), // ServeTLS adds its ALPN protocols to it
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ConnContext:       withConn, // for pacedBody to tell the connection limiter
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: MaxStreamsPerConn},
		ErrorLog:          newStdLogger(s.log),
	}
}

// serve serves hs on ln, over TLS when it is configured.
func serve(hs *http.Server, ln net.Listener) error {
	if hs.TLSConfig != nil {
		return hs.ServeTLS(ln, "", "") // certificates come from hs.TLSConfig
	}
	return hs.Serve(ln)
}

// extendWriteDeadline gives a streaming response another WriteTimeout from now.
// Streaming handlers (the NDJSON beds listing) call it before writing each line: the
// stream may run as long as it makes progress, while a client that stops reading is
// still cut off one WriteTimeout later. Deadlines are wall-clock, so Config.Now is
// not used.
func (s *Server) extendWriteDeadline(w http.ResponseWriter) error {
	return setWriteDeadline(w, time.Now().Add(s.cfg.WriteTimeout))
}

// progressive is w with the write deadline moved before each write, for a response
// whose size is a stored object's (a picture, a photo, a point cloud, an export): it
// runs as long as it progresses however slow the link, and a client that stops
// reading is still cut off one WriteTimeout later. Each write is flushed, so that no
// tail waits in a buffer for the handler's end, to be sent under a stale deadline.
// Bodies written through it lose io.Copy's sendfile, which a slow link does not miss.
func (s *Server) progressive(w http.ResponseWriter) http.ResponseWriter {
	return progressWriter{ResponseWriter: w, extend: func() error { return s.extendWriteDeadline(w) }}
}

type progressWriter struct {
	http.ResponseWriter
	extend func() error
}

func (p progressWriter) Write(b []byte) (int, error) {
	if err := p.extend(); err != nil {
		return 0, err
	}
	n, err := p.ResponseWriter.Write(b)
	if err != nil {
		return n, err
	}
	if err := http.NewResponseController(p.ResponseWriter).Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return n, err
	}
	return n, nil
}

// Unwrap lets http.ResponseController reach the connection.
func (p progressWriter) Unwrap() http.ResponseWriter { return p.ResponseWriter }

func setWriteDeadline(w http.ResponseWriter, t time.Time) error {
	err := http.NewResponseController(w).SetWriteDeadline(t)
	if errors.Is(err, http.ErrNotSupported) {
		return nil // no connection underneath (httptest.ResponseRecorder): nothing to move
	}
	return err
}

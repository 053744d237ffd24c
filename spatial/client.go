package spatial

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// CacheDisabled as ClientConfig.CacheTTL turns the answer cache off.
const CacheDisabled time.Duration = -1

// DefaultMaxInFlight lets a cold 6 × 33 garden (about 430 calls once the project
// details are in) finish in about two more round trips: at 64 it took seven waves, 263 ms
// at 30 ms per call, against 111 ms at 256. The calls share one HTTP/2 connection and
// each costs the server one small lookup; lower it with --spatial-concurrency for a
// small spatial server.
const DefaultMaxInFlight = 256

// Defaults of ClientConfig.
const (
	DefaultCallTimeout  = 5 * time.Second
	DefaultCloudTimeout = 2 * time.Minute
	DefaultCacheTTL     = 30 * time.Second
	// DefaultCacheEntries: a few MiB.
	DefaultCacheEntries = 20000
	// DefaultMaxRecvBytes: deployed servers send point clouds of up to about 100 MiB.
	DefaultMaxRecvBytes = 128 << 20
	DefaultAttempts     = 2
)

// ClientConfig configures a Client. Zero values take the documented defaults.
type ClientConfig struct {
	// Addr is the spatial server's host:port (or any gRPC target).
	Addr string
	// TLS enables TLS with the system roots, or with CAFile's certificates when set.
	TLS    bool
	CAFile string
	// CallTimeout bounds each attempt of a call once it is sent, and separately its wait
	// for a free slot (MaxInFlight). Default 5s.
	CallTimeout time.Duration
	// CloudTimeout bounds each attempt of a point-cloud download: clouds of up to
	// about 100 MiB need far longer than a small call. Default 2m.
	CloudTimeout time.Duration
	// MaxInFlight caps the calls in flight over the whole client. Default
	// DefaultMaxInFlight. Calls wait for a slot in turns per Caller.Share (garden), and
	// one share holds at most seven eighths of them.
	MaxInFlight int
	// CacheTTL is how long answers (project details, measurements, instances, classes,
	// transforms) are kept. Default 30s; CacheDisabled (any negative value) turns the
	// cache off. Zero means "unset" so that a zero ClientConfig is useful.
	CacheTTL time.Duration
	// CacheEntries caps the cache's size. Default 20000 (a few MiB).
	CacheEntries int
	// MaxRecvBytes is the largest message accepted. Default 128 MiB: deployed servers
	// send point clouds of up to about 100 MiB.
	MaxRecvBytes int
	// Attempts is how many times a call answered Unavailable is tried (a bed costs
	// about 70 calls, so without retrying a server failing 1% of calls fails half the
	// beds). Each attempt has its own CallTimeout. Default 2; 1 disables retrying.
	Attempts int
	// ReconnectMaxDelay caps the wait between attempts to reconnect to a server that
	// went away (starting at 1 s, growing 1.6 times per failed attempt, ±20 %): after
	// an outage, beds answer again at most about this long after the server is back.
	// gRPC's own cap is 120 s. Default DefaultReconnectMaxDelay.
	ReconnectMaxDelay time.Duration
	// Now is the clock for cache expiry. Default time.Now.
	Now func() time.Time
	// ObserveCall, when set, is told of every RPC sent (each attempt): its full
	// method name, gRPC status code name ("OK", "Unavailable", …) and duration
	// (metrics).
	ObserveCall func(method, code string, d time.Duration)
}

// DefaultReconnectMaxDelay: a spatial server back from an outage is used again within
// about 3.6 s (the cap plus jitter); a server that stays down costs one connection
// attempt per 3 s.
const DefaultReconnectMaxDelay = 3 * time.Second

// connectTimeout bounds one connection attempt (TCP, TLS, HTTP/2 handshake): a
// blackholed address is given up after it and tried again after the backoff. gRPC's
// own is 20 s; 10 s still leaves room for a TLS handshake over a slow uplink.
const connectTimeout = 10 * time.Second

func (c ClientConfig) withDefaults() ClientConfig {
	if c.CallTimeout <= 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	if c.CloudTimeout <= 0 {
		c.CloudTimeout = DefaultCloudTimeout
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.CacheTTL == 0 {
		c.CacheTTL = DefaultCacheTTL
	}
	if c.CacheEntries <= 0 {
		c.CacheEntries = DefaultCacheEntries
	}
	if c.MaxRecvBytes <= 0 {
		c.MaxRecvBytes = DefaultMaxRecvBytes
	}
	if c.Attempts <= 0 {
		c.Attempts = DefaultAttempts
	}
	if c.ReconnectMaxDelay <= 0 {
		c.ReconnectMaxDelay = DefaultReconnectMaxDelay
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Client reads beds, plants and point clouds from a spatial data server. It is safe for
// concurrent use; one Client (one connection) serves the whole process.
type Client struct {
	cfg    ClientConfig
	log    zerolog.Logger
	conn   *grpc.ClientConn
	slots  *slots    // MaxInFlight, shared fairly between gardens
	cache  *ttlCache // nil when disabled
	flight flightGroup

	closed                atomic.Bool
	inFlight, maxInFlight atomic.Int64
	cacheHits             atomic.Int64
	callsMu               sync.Mutex
	calls                 map[string]int64
}

// ClientStats counts what a Client did since Dial.
type ClientStats struct {
	// Calls is the number of RPCs sent per full method name (retries included, cache
	// hits and collapsed calls not).
	Calls map[string]int64
	// InFlight is the number of calls in flight now, MaxInFlight the most ever at once.
	InFlight, MaxInFlight int
	// CacheHits counts answers served from the cache, Collapsed the callers that joined
	// an identical call already in flight.
	CacheHits, Collapsed int64
	CacheEntries         int
}

// Dial creates a Client for cfg.Addr. The connection is made lazily, on the first call,
// so Dial succeeds while the server is down.
func Dial(cfg ClientConfig, log zerolog.Logger) (*Client, error) {
	cfg = cfg.withDefaults()
	if cfg.Addr == "" {
		return nil, errors.New("spatial: no server address")
	}
	creds := insecure.NewCredentials()
	if cfg.TLS {
		tc := &tls.Config{MinVersion: tls.VersionTLS12}
		if cfg.CAFile != "" {
			pem, err := os.ReadFile(cfg.CAFile)
			if err != nil {
				return nil, fmt.Errorf("spatial: reading CA file: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("spatial: CA file %s holds no PEM certificate", cfg.CAFile)
			}
			tc.RootCAs = pool
		}
		creds = credentials.NewTLS(tc)
	}
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(cfg.MaxRecvBytes)),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: backoff.Config{
				BaseDelay:  min(cfg.ReconnectMaxDelay, backoff.DefaultConfig.BaseDelay),
				Multiplier: backoff.DefaultConfig.Multiplier,
				Jitter:     backoff.DefaultConfig.Jitter,
				MaxDelay:   min(cfg.ReconnectMaxDelay, backoff.DefaultConfig.MaxDelay),
			},
			MinConnectTimeout: connectTimeout,
		}),
	}
	if cfg.ObserveCall != nil {
		opts = append(opts, grpc.WithUnaryInterceptor(observeCalls(cfg.ObserveCall)))
	}
	conn, err := grpc.NewClient(cfg.Addr, opts...)
	if err != nil {
		return nil, fmt.Errorf("spatial: client for %s: %w", cfg.Addr, err)
	}
	c := &Client{
		cfg:   cfg,
		log:   log.With().Str("component", "spatial").Logger(),
		conn:  conn,
		slots: newSlots(cfg.MaxInFlight),
		calls: map[string]int64{},
	}
	if cfg.CacheTTL > 0 {
		c.cache = newTTLCache(cfg.CacheTTL, cfg.CacheEntries, cfg.Now)
	}
	return c, nil
}

// Close closes the connection; calls in flight fail (and are not logged as failures
// of the server).
func (c *Client) Close() error {
	c.closed.Store(true)
	return c.conn.Close()
}

// Stats returns a snapshot of the client's counters.
func (c *Client) Stats() ClientStats {
	c.callsMu.Lock()
	calls := make(map[string]int64, len(c.calls))
	for k, v := range c.calls {
		calls[k] = v
	}
	c.callsMu.Unlock()
	return ClientStats{
		Calls:        calls,
		InFlight:     int(c.inFlight.Load()),
		MaxInFlight:  int(c.maxInFlight.Load()),
		CacheHits:    c.cacheHits.Load(),
		Collapsed:    c.flight.joins.Load(),
		CacheEntries: c.cache.len(),
	}
}

// ResetCache drops every cached answer (benchmarks use it to measure cold fetches).
func (c *Client) ResetCache() { c.cache.reset() }

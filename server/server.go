// Package server is gardend's HTTP API: one Server, one file per resource, errors
// mapped to problem+json in one place.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/gardend/gardend/imagestore"
	"github.com/gardend/gardend/server/metrics"
	"github.com/gardend/gardend/server/photo"
	"github.com/gardend/gardend/server/pointcloud"
	"github.com/gardend/gardend/server/scan"
	"github.com/gardend/gardend/server/tiles"
	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/store"
)

// Config is everything the server needs; cli builds it from flags and environment.
type Config struct {
	// Store is the database the server runs on, opened by the caller (cli.openStore:
	// the bbolt file of the data directory, or PostgreSQL); the server closes it.
	// StoreCreated says that opening it created it (no data yet), for the start-up
	// sweeps (cleanup.go).
	Store        store.Backend
	StoreCreated bool
	// DataDir holds what a node keeps of its own: the bbolt database and images with
	// the default backend; the point-cloud cache, upload files and the admin socket
	// with any.
	DataDir string
	Addr    string
	// Listener, when set, is where Run serves instead of listening on Addr (the one
	// AwaitStore answered on while the database was down).
	Listener net.Listener
	// TokenTTL is the lifetime of a login token.
	TokenTTL time.Duration
	// CORSOrigins lists the browser origins other than the server's own that may read
	// its answers; "*" allows any. Empty: same-origin only (no CORS headers at all).
	CORSOrigins []string
	// MaxBodyBytes limits JSON bodies; MaxImageBytes the image upload body.
	MaxBodyBytes  int64
	MaxImageBytes int64
	// MaxImagePixels refuses uploads of pictures with more pixels, from their header
	// (400); 0 takes DefaultMaxImagePixels.
	MaxImagePixels int64
	// Log photos (photos.go): MaxPhotoBytes limits an upload's body, MaxPhotoPixels
	// what it may decode to (photo.Limits), PhotoStorageBytes what all photos may keep
	// together (0: no limit; 507 beyond).
	MaxPhotoBytes     int64
	MaxPhotoPixels    int64
	PhotoStorageBytes int64
	// TrustProxy honours X-Forwarded-Proto/Host when building absolute URLs, and the
	// last X-Forwarded-For entry as the client address (login limits).
	TrustProxy bool
	// ShutdownTimeout bounds the wait for in-flight requests on shutdown.
	ShutdownTimeout time.Duration
	// SweepInterval is how often expired tokens are deleted.
	SweepInterval time.Duration
	// Argon2 and MaxHashing set password hashing cost and concurrency: at most
	// MaxHashing hashes at once (default: one per core, see DefaultMaxHashing), and
	// together at most MaxHashing × Argon2.Memory.
	Argon2     store.Argon2Params
	MaxHashing int
	// MaxCompressors bounds the answers gzip-compressed at once (compress.go); 0 takes
	// two per core.
	MaxCompressors int
	// ListPageSize is how many records of a long list (companies, gardens,
	// permissions) are read from the store at a time (liststream.go); 0 takes
	// store.ListPageSize. Tests lower it.
	ListPageSize int
	// HashingProcs gives hashes Ps of their own while they run (hashing.go): for the
	// process that serves (gardend serve); tests leave GOMAXPROCS alone.
	HashingProcs bool
	// AdminSocket enables the CLI's Unix socket in the data directory.
	AdminSocket bool
	// Demo seeds a demo account and demo data at start, and runs an in-process demo
	// spatial server (on a loopback port) that the client uses instead of Spatial.Addr.
	Demo bool
	// DemoLatency is added to every call of the demo spatial server.
	DemoLatency time.Duration
	// Spatial configures the spatial data server client. Without an Addr (and without
	// Demo) the beds and plants endpoints answer 503.
	Spatial spatial.ClientConfig
	// Clouds tunes the background point-cloud downloads.
	Clouds pointcloud.Config
	// History tunes history, the background reader and the demo's robot.
	History HistoryConfig
	// Tiles tunes the pictures' tile pyramids (imagetiles.go); its MaxPixels is
	// MaxImagePixels.
	Tiles tiles.Config
	// SignedURLTTL is how long the signed URLs of the 3D scene work; default
	// DefaultSignedURLTTL.
	SignedURLTTL time.Duration
	// CompatLineGap spaces the lines of the beds stream for clients that parse each
	// network read as one JSON document (compatgap.go); 0 (the default) sends each
	// line as soon as it is ready.
	CompatLineGap time.Duration
	// CompatPlantMap answers as the original PlantMap server where its unchanged web
	// client needs it (--compat plantmap, compatplantmap.go).
	CompatPlantMap bool
	// SpatialProjects says who may list every project of the spatial server
	// (spatialprojects.go): SpatialProjectsGardenAdmins (the default) or
	// SpatialProjectsSiteAdmins, for a spatial server shared by several tenants.
	SpatialProjects string
	// MaxBedsPerGarden is the most beds POST …/beds lets a garden have: every bed
	// costs about 70 spatial calls per cold listing. 0 takes DefaultMaxBedsPerGarden; a
	// negative value means no limit. Gardens that have more keep them.
	MaxBedsPerGarden int
	// Field hardening (httpserver.go, ratelimit.go); zero values take the defaults.
	// LoginFailLimit failed logins per LoginFailWindow, per account (however its name is spelt) and per address.
	LoginFailLimit  int
	LoginFailWindow time.Duration
	Registration    RegistrationMode
	// RegisterLimit accounts may be registered per client address, and
	// RegisterGlobalLimit in all, per RegisterWindow (registration.go).
	RegisterLimit       int
	RegisterGlobalLimit int
	RegisterWindow      time.Duration
	// Timeouts and limits of the HTTP server; MaxConcurrent requests at once, 503 beyond.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int
	MaxConcurrent     int
	// Request bodies (capacity.go): each may take BodyTimeout plus a second per
	// BodyMinRate bytes (408 beyond); bodies read ahead of a request slot may hold
	// BodyBufferBytes of memory together (503 beyond); MaxUploads image uploads at once.
	BodyTimeout     time.Duration
	BodyMinRate     int64
	BodyBufferBytes int64
	MaxUploads      int
	// MaxCloudResponses point-cloud files are sent at once, a quarter of them to one
	// client address (cloudslots.go); 503 beyond. Default DefaultMaxCloudResponses.
	MaxCloudResponses int
	// Open connections (connlimit.go): MaxConns in all, MaxConnsPerAddr from one
	// client address (an IPv6 /64); the per-address cap is off with TrustProxy.
	MaxConns        int
	MaxConnsPerAddr int
	// TLSCertFile and TLSKeyFile (PEM) enable HTTPS; both or neither.
	TLSCertFile, TLSKeyFile string
	// MetricsAddr, when set, serves GET /metrics (Prometheus) on a listener of its
	// own, never on Addr. The admin socket serves it regardless.
	MetricsAddr string
	// Sync between sites (docs/sync.md): a field box sends its records to the
	// office's hub at SyncUplink (nats-leaf:// or tls://) with the credentials file
	// SyncCreds (SyncCA checks a tls:// hub), keeping at most SyncMaxBytes for it while
	// the uplink is down; an office node applies the sites' records from the hub at
	// SyncHub (nats://), where it keeps at most SyncSiteMaxBytes of each site. Empty:
	// no sync, no NATS server.
	SyncUplink, SyncCreds, SyncCA  string
	SyncMaxBytes, SyncSiteMaxBytes int64
	SyncHub                        string
	// Build is what GET /version reports; the binary's build information when zero.
	Build BuildInfo
	// Now is the clock; time.Now when nil. Tests inject one.
	Now    func() time.Time
	Logger zerolog.Logger
}

// Defaults for Config fields left zero.
const (
	DefaultAddr          = "127.0.0.1:8000"
	DefaultTokenTTL      = 10 * time.Hour
	DefaultMaxBodyBytes  = 1 << 20
	DefaultMaxImageBytes = 64 << 20
	// DefaultMaxImagePixels: a 20,000 × 20,000 orthophoto; tiling memory follows the
	// width, not this.
	DefaultMaxImagePixels = 400_000_000
	DefaultMaxPhotoBytes  = 16 << 20
	// DefaultMaxBedsPerGarden: far above a farm's beds (the seed has 6), far below the
	// thousands of made-up beds that let one tenant slow every other's listings.
	DefaultMaxBedsPerGarden = 500
	// ClusterQueuePoll is how often a node of a shared database looks at the download
	// queue when nothing woke it: jobs other nodes queued, or left when they died,
	// wait at most this long for it.
	ClusterQueuePoll = 2 * time.Second
	// DefaultShutdownTimeout: long enough for a beds stream of a large garden to end.
	DefaultShutdownTimeout = 15 * time.Second
	DefaultSweepInterval   = 10 * time.Minute
)

func (c *Config) setDefaults() {
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.TokenTTL <= 0 {
		c.TokenTTL = DefaultTokenTTL
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.MaxImageBytes <= 0 {
		c.MaxImageBytes = DefaultMaxImageBytes
	}
	if c.MaxImagePixels <= 0 {
		c.MaxImagePixels = DefaultMaxImagePixels
	}
	if c.MaxPhotoBytes <= 0 {
		c.MaxPhotoBytes = DefaultMaxPhotoBytes
	}
	if c.MaxPhotoPixels <= 0 {
		c.MaxPhotoPixels = photo.DefaultMaxPixels
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.SweepInterval <= 0 {
		c.SweepInterval = DefaultSweepInterval
	}
	if c.Argon2 == (store.Argon2Params{}) {
		c.Argon2 = store.DefaultArgon2
	}
	if c.MaxHashing <= 0 {
		c.MaxHashing = DefaultMaxHashing()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Build == (BuildInfo{}) {
		c.Build = ReadBuildInfo(BuildInfo{})
	}
	if c.SignedURLTTL <= 0 {
		c.SignedURLTTL = DefaultSignedURLTTL
	}
	if c.SpatialProjects == "" {
		c.SpatialProjects = SpatialProjectsGardenAdmins
	}
	if c.MaxCompressors <= 0 {
		// Two per core keep the cores busy at most; each holds about 1 MiB.
		c.MaxCompressors = 2 * runtime.NumCPU()
	}
	if c.MaxBedsPerGarden == 0 {
		c.MaxBedsPerGarden = DefaultMaxBedsPerGarden
	}
	if c.Clouds.Node == "" && c.DataDir != "" {
		// Nodes on one database must have names of their own, stable across restarts:
		// two on one host differ in their data directories.
		dir, _ := filepath.Abs(c.DataDir)
		c.Clouds.Node = pointcloud.DefaultNode() + ":" + dir
	}
	if _, shared := c.Store.(store.Shared); shared && c.Clouds.Poll == 0 {
		c.Clouds.Poll = ClusterQueuePoll
	}
	c.Clouds = c.Clouds.WithDefaults()
	c.setFieldDefaults()
	c.setRegistrationDefaults()
}

// Server is the running service.
type Server struct {
	cfg   Config
	log   zerolog.Logger
	store store.Backend
	// images holds the garden images' bytes (imagecontent.go); uploads is the
	// directory uploads stream into first (images/ itself with files).
	images  store.ImageContent
	uploads *imagestore.Store
	// photos holds the log photos' bytes; photoFiles is the directory a photo
	// streams into first (photos/ itself with files, the upload directory with a
	// shared backend); photoWork admits one photo decode at a time (photos.go).
	photos     store.PhotoContent
	photoFiles *imagestore.Store
	photoWork  chan struct{}
	// shared is the backend when several nodes share it (nil with bbolt).
	shared store.Shared
	pw     *store.Passwords
	// decoy is what a login with no hash to check runs (decoy.go).
	decoy atomic.Pointer[store.Decoy]
	procs *hashingProcs // nil without Config.HashingProcs
	// compress holds the gzip writers of compressed answers (compress.go).
	compress *compressor
	admin    *Admin
	metrics  *metrics.Metrics
	// pingDB checks the database answers; shared by /readyz and Alive.
	pingDB  func(context.Context) error
	handler http.Handler
	routes  []route
	// cap holds the request and upload slots; conns is the listener's connection
	// limiter while Run serves.
	cap   *capacity
	conns atomic.Pointer[connLimiter]
	// logins limits failed logins, registrations created accounts; tlsConfig is nil
	// without TLS.
	logins        *loginLimits
	registrations *registrationLimits
	tlsConfig     *tls.Config
	// spatial and clouds are nil without a spatial data server; cloudFiles are the
	// kept point clouds.
	spatial *spatial.Client
	// spatialDown: the last spatial check failed (checkSpatial logs the changes).
	spatialDown atomic.Bool
	clouds      *pointcloud.Pool
	cloudFiles  *pointcloud.Files
	cloudSlots  *cloudSlots
	demo        *demoSpatial
	// recorder records reads of beds; reader reads them in the background.
	recorder *scan.Recorder
	reader   *scan.Reader
	// tiles builds and keeps the pictures' tile pyramids.
	tiles *tiles.Manager
	// signer signs the URLs of kept point clouds.
	signer urlSigner
	// demoGarden is the demo garden's path, set by Run before Ready.
	demoGarden string
	// sync is the box's or office's sync (sync.go), sites names the sites it knows;
	// both nil without one.
	sync  syncer
	sites SiteNamer
	// keptValues are the bed values a box last kept for the office (bedvalues.go).
	keptValues keptValues

	mu          sync.Mutex
	addr        string
	metricsAddr string
	ready       chan struct{}

	hooks testHooks
}

// testHooks let internal tests stop a request at a chosen point; nil in production.
// They are set before the server handles requests.
type testHooks struct {
	// verified runs in /login after the password was found right, before the token is
	// created.
	verified func(username string)
}

// New opens the data directory and builds the handler; Run serves it.
func New(cfg Config) (*Server, error) {
	s, err := newServer(cfg)
	if err != nil && cfg.Store != nil {
		_ = cfg.Store.Close() // the server owns it from New on; err is the one to report
	}
	return s, err
}

func newServer(cfg Config) (*Server, error) {
	cfg.setDefaults()
	if cfg.DataDir == "" {
		return nil, errors.New("data directory is required")
	}
	if _, err := ParseRegistrationMode(string(cfg.Registration)); err != nil {
		return nil, err
	}
	if err := CheckSpatialProjects(cfg.SpatialProjects); err != nil {
		return nil, err
	}
	if err := CheckCompatLineGap(cfg.CompatLineGap); err != nil {
		return nil, err
	}
	if err := checkCORSOrigins(cfg.CORSOrigins); err != nil {
		return nil, err
	}
	tlsConfig, err := loadTLS(cfg.TLSCertFile, cfg.TLSKeyFile, cfg.Now(), cfg.Logger)
	if err != nil {
		return nil, err
	}
	st := cfg.Store
	if st == nil {
		return nil, errors.New("a store is required (Config.Store)")
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	m := metrics.New(metrics.Build{Version: cfg.Build.Version, Revision: cfg.Build.Revision, Go: cfg.Build.Go})
	if o, ok := st.(store.TxObserver); ok {
		o.ObserveTx(m.ObserveTx)
	}
	cluster, _ := st.(store.Shared)
	urlKey, err := loadSigningKey(cfg.DataDir, cluster)
	if err != nil {
		return nil, err
	}
	uploads, images, err := openImages(cfg.DataDir, cluster)
	if err != nil {
		return nil, err
	}
	photoFiles, photos, err := openPhotos(cfg.DataDir, st)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:      cfg,
		log:      cfg.Logger,
		store:    st,
		images:   images,
		uploads:  uploads,
		shared:   cluster,
		pw:       store.NewPasswords(cfg.Argon2, cfg.MaxHashing),
		ready:    make(chan struct{}),
		cap:      newCapacity(&cfg),
		compress: newCompressor(cfg.MaxCompressors),

		cloudSlots: newCloudSlots(cfg.MaxCloudResponses, cfg.BodyMinRate),
		photos:     photos,
		photoFiles: photoFiles,
		photoWork:  make(chan struct{}, 1),

		metrics: m,
		pingDB:  shared(st.Ping),

		logins:        newLoginLimits(cfg.LoginFailLimit, cfg.LoginFailWindow, limitKeys, cfg.Now),
		registrations: newRegistrationLimits(cfg),
		tlsConfig:     tlsConfig,
		signer:        urlSigner{key: urlKey, now: cfg.Now, ttl: cfg.SignedURLTTL},

		cloudFiles: pointcloud.NewFiles(cfg.DataDir, cfg.Clouds.MaxBytes, cfg.Logger),
	}
	s.pw.OnPriorityError(func(err error) {
		s.log.Warn().Err(err).Msg("password hashes run at normal priority, competing with requests: " +
			"a hashing thread's priority cannot be lowered (allow setpriority in the unit's SystemCallFilter, see docs/deploy.md)")
	})
	if cfg.HashingProcs {
		s.procs = &hashingProcs{extra: cfg.MaxHashing, linger: hashingProcsLinger, running: func() int {
			n, _ := s.pw.Queue()
			return n
		}}
		s.pw.OnHashing(s.procs.changed)
	}
	if err := s.sweep(cfg.StoreCreated); err != nil {
		return nil, err
	}
	if s.tiles, err = s.openTiles(); err != nil {
		return nil, err
	}
	s.refreshDecoy()
	s.cfg.Spatial.ObserveCall = m.ObserveSpatialCall
	if err := s.openSpatial(); err != nil {
		s.closeSpatial()
		return nil, err
	}
	if err := s.openSync(context.Background()); err != nil {
		s.closeSpatial()
		return nil, err
	}
	s.openHistory()
	m.SetSources(s.metricSources())
	s.watchSync()
	s.admin = NewAdmin(st, s.pw, cfg.DataDir)
	s.admin.sync = s.sync
	s.admin.afterRemove = s.afterRemove
	s.admin.clouds = s.clouds
	s.handler = s.buildHandler()
	return s, nil
}

// Handler is the whole HTTP stack (middleware and routes), for tests and benchmarks.
func (s *Server) Handler() http.Handler { return s.handler }

// Store is the opened store, for tests that set up records directly.
func (s *Server) Store() store.Backend { return s.store }

// Passwords is the password hasher, for tests that count hashes.
func (s *Server) Passwords() *store.Passwords { return s.pw }

// Images is the directory uploads stream into (with a one-node backend the image
// directory itself), for tests that inject faults into it.
func (s *Server) Images() *imagestore.Store { return s.uploads }

// Tiles is the tile manager, for tests that run or stop its builds.
func (s *Server) Tiles() *tiles.Manager { return s.tiles }

// Ready is closed once Run listens; Addr is valid after that.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Addr is the address Run listens on (useful with port 0).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Run listens on cfg.Addr and serves until ctx is cancelled, then stops accepting,
// waits up to ShutdownTimeout for in-flight requests and returns.
func (s *Server) Run(ctx context.Context) error {
	ln, err := s.cfg.Listener, error(nil)
	if ln == nil {
		if ln, err = net.Listen("tcp", s.cfg.Addr); err != nil {
			return fmt.Errorf("listen on %s: %w", s.cfg.Addr, err)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var bg sync.WaitGroup
	if s.cfg.AdminSocket {
		sock, err := s.listenAdmin()
		if err != nil {
			_ = ln.Close() // err is the one to report
			return err
		}
		bg.Go(func() { s.serveAdmin(ctx, sock) })
	}
	if s.cfg.Demo {
		if err := s.seedDemo(ctx); err != nil {
			_ = ln.Close() // err is the one to report
			return fmt.Errorf("seed demo data: %w", err)
		}
	}
	if s.cfg.MetricsAddr != "" {
		mln, err := net.Listen("tcp", s.cfg.MetricsAddr)
		if err != nil {
			_ = ln.Close() // err is the one to report
			return fmt.Errorf("metrics listener on %s: %w", s.cfg.MetricsAddr, err)
		}
		s.mu.Lock()
		s.metricsAddr = mln.Addr().String()
		s.mu.Unlock()
		bg.Go(func() { s.serveMetrics(ctx, mln) })
	}
	bg.Go(func() { s.sweepTokens(ctx) })
	bg.Go(func() { s.refreshDecoyEvery(ctx, decoyRefresh) })
	if s.clouds != nil {
		bg.Go(func() { s.clouds.Run(ctx) })
	}
	bg.Go(func() { s.tiles.Run(ctx) })
	if s.spatial != nil {
		bg.Go(func() { s.probeSpatial(ctx) })
	}
	if s.sync != nil {
		bg.Go(func() {
			if err := s.sync.Run(ctx); err != nil {
				s.log.Error().Err(err).Msg("sync stopped")
			}
		})
	}
	bg.Go(func() { s.reader.Run(ctx) })
	bg.Go(func() { s.runDemoRobot(ctx) })

	perAddr := s.cfg.MaxConnsPerAddr
	if s.cfg.TrustProxy {
		perAddr = 0 // every connection comes from the proxy; it limits per client
	}
	lim := newConnLimiter(ln, s.cfg.MaxConns, perAddr, s.log)
	lim.bodyRate = s.cfg.BodyMinRate
	s.conns.Store(lim)
	hs := s.newHTTPServer(ctx, s.handler)
	hs.ConnState = lim.track
	s.mu.Lock()
	s.addr = ln.Addr().String()
	s.mu.Unlock()
	s.log.Info().Str("addr", s.addr).Bool("tls", s.tlsConfig != nil).Str("data", s.cfg.DataDir).Msg("listening")
	close(s.ready)

	serveErr := make(chan error, 1)
	go func() { serveErr <- serve(hs, lim) }()
	select {
	case err := <-serveErr:
		cancel()
		bg.Wait()
		return err
	case <-ctx.Done():
	}
	s.log.Info().Msg("shutting down")
	shutCtx, done := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer done()
	err = hs.Shutdown(shutCtx)
	if err != nil {
		s.log.Warn().Err(err).Msg("in-flight requests did not finish in time; closing them")
		_ = hs.Close() // the listener's error only; connections are closed
	}
	bg.Wait()
	if e := <-serveErr; e != nil && !errors.Is(e, http.ErrServerClosed) {
		return e
	}
	return nil
}

// Close releases the spatial client, the demo spatial server and the store. Call it
// after Run returns.
func (s *Server) Close() error {
	if s.procs != nil {
		s.procs.stop()
	}
	s.closeSpatial()
	if s.sync != nil {
		s.sync.Close()
	}
	return s.store.Close()
}

func (s *Server) closeSpatial() {
	if s.spatial != nil {
		_ = s.spatial.Close() // shutting down: nothing to retry
	}
	if s.demo != nil {
		s.demo.srv.Stop()
	}
}

func (s *Server) sweepTokens(ctx context.Context) {
	t := time.NewTicker(s.cfg.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n, err := s.store.SweepExpiredTokens()
			if err != nil {
				s.log.Error().Err(err).Msg("sweep expired tokens")
			} else if n > 0 {
				s.log.Info().Int("tokens", n).Msg("swept expired tokens")
			}
			if s.shared != nil {
				s.sweepSharedImages(ctx)
				s.sweepTiles(false)
				s.sweepSharedPhotos(ctx)
			}
		}
	}
}

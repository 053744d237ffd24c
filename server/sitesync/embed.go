package sitesync

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/gardend/gardend/server/atomicfile"
)

// BoxServerOptions configure the NATS server a field box embeds.
type BoxServerOptions struct {
	Site SiteIdentity
	// StoreDir holds JetStream's files (DATA/nats).
	StoreDir string
	// Uplink is the hub's leaf-node address: nats-leaf://HOST:PORT, or tls://HOST:PORT
	// with CAFile (PEM) to check the hub's certificate.
	Uplink    string
	CredsFile string
	CAFile    string
	// MaxBytes bounds what JetStream may keep (its account's storage).
	MaxBytes int64
	Logger   zerolog.Logger
}

// ParseUplink checks a --sync-uplink address and returns it as nats-server takes it.
func ParseUplink(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.Path != "" && u.Path != "/" || u.User != nil || u.RawQuery != "" {
		return nil, fmt.Errorf("--sync-uplink %q: want nats-leaf://HOST:PORT or tls://HOST:PORT", s)
	}
	switch u.Scheme {
	case "nats-leaf", "nats", "tls":
	default:
		return nil, fmt.Errorf("--sync-uplink %q: the scheme must be nats-leaf:// or tls://", s)
	}
	if u.Port() == "" {
		u.Host += ":7422"
	}
	u.Path = ""
	return u, nil
}

// StartBoxServer starts the box's NATS server: JetStream in the site's domain with
// its files in StoreDir, no listener of its own (gardend connects in-process), and a
// leaf-node connection to the hub that it keeps retrying while the uplink is down.
func StartBoxServer(o BoxServerOptions) (*server.Server, error) {
	u, err := ParseUplink(o.Uplink)
	if err != nil {
		return nil, err
	}
	remote := &server.RemoteLeafOpts{URLs: []*url.URL{u}, Credentials: o.CredsFile}
	if u.Scheme == "tls" || o.CAFile != "" {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: u.Hostname()}
		if o.CAFile != "" {
			pem, err := os.ReadFile(o.CAFile)
			if err != nil {
				return nil, fmt.Errorf("--sync-ca: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("--sync-ca %s: no PEM certificate in it", o.CAFile)
			}
			cfg.RootCAs = pool
		}
		remote.TLS, remote.TLSConfig = true, cfg
	}
	if err := os.MkdirAll(o.StoreDir, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", o.StoreDir, err)
	}
	opts := &server.Options{
		ServerName:      "gardend-" + o.Site.Name,
		DontListen:      true,
		JetStream:       true,
		JetStreamDomain: SiteDomain(o.Site.Number),
		StoreDir:        filepath.Clean(o.StoreDir),
		// What the box acknowledged is on disk before the sync loop lets it go.
		SyncAlways: true,
		MaxPayload: DefaultMaxPayload,
		NoSigs:     true,
		LeafNode: server.LeafNodeOpts{
			Remotes:           []*server.RemoteLeafOpts{remote},
			ReconnectInterval: 2 * time.Second,
		},
	}
	if o.MaxBytes > 0 {
		// The stream of changes and the picture bucket may each reserve MaxBytes (the
		// sync loop keeps them together under it), plus JetStream's bookkeeping. They
		// reserve what they were last set up with until the box lowers them, so a
		// lower --sync-max-bytes than the last start's must leave room for that.
		limit := max(o.MaxBytes, LastMaxBytes(o.StoreDir))
		opts.JetStreamMaxStore = 2*limit + limit/4 + 64<<20
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded NATS server: %w", err)
	}
	srv.SetLoggerV2(natsLogger{o.Logger.With().Str("component", "nats").Logger()}, false, false, false)
	srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		return nil, errors.New("embedded NATS server did not start within 30s")
	}
	return srv, nil
}

// maxBytesFile, beside NATS's files, keeps the --sync-max-bytes the box's stream
// and bucket were last set up with.
const maxBytesFile = "max-bytes"

// LastMaxBytes is the --sync-max-bytes the box's stream and bucket in storeDir were
// last set up with; 0 when unknown.
func LastMaxBytes(storeDir string) int64 {
	data, err := os.ReadFile(filepath.Join(storeDir, maxBytesFile))
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// setLastMaxBytes records the limit the stream and bucket are set up with now.
func setLastMaxBytes(storeDir string, n int64) error {
	return atomicfile.WriteFile(filepath.Join(storeDir, maxBytesFile), []byte(strconv.FormatInt(n, 10)+"\n"), atomicfile.Options{})
}

// ConnectInProcess connects to an embedded server without a socket.
func ConnectInProcess(srv *server.Server, name string, opts ...nats.Option) (*nats.Conn, error) {
	return nats.Connect("", append([]nats.Option{nats.InProcessServer(srv), nats.Name(name),
		nats.MaxReconnects(-1)}, opts...)...)
}

// natsLogger sends nats-server's log lines to zerolog: its warnings and errors as
// such, its notices at debug level (they are many and routine).
type natsLogger struct{ log zerolog.Logger }

func (l natsLogger) Noticef(format string, v ...any) { l.log.Debug().Msgf(format, v...) }
func (l natsLogger) Warnf(format string, v ...any)   { l.log.Warn().Msgf(format, v...) }
func (l natsLogger) Fatalf(format string, v ...any)  { l.log.Error().Msgf(format, v...) }
func (l natsLogger) Errorf(format string, v ...any)  { l.log.Error().Msgf(format, v...) }
func (l natsLogger) Debugf(format string, v ...any)  { l.log.Trace().Msgf(format, v...) }
func (l natsLogger) Tracef(format string, v ...any)  { l.log.Trace().Msgf(format, v...) }

package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"
)

var errTLSPair = errors.New("TLS needs a certificate file and a key file: give both or neither")

// loadTLS reads the certificate and key at start, so a missing or mismatched file is
// a clear start-up error rather than a failed handshake later. It returns nil when TLS
// is off. Renewed files take effect on restart.
func loadTLS(certFile, keyFile string, now time.Time, log zerolog.Logger) (*tls.Config, error) {
	if certFile == "" && keyFile == "" {
		return nil, nil
	}
	if certFile == "" || keyFile == "" {
		return nil, errTLSPair
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("load TLS certificate %s and key %s: %w", certFile, keyFile, err)
	}
	if leaf := cert.Leaf; leaf != nil && now.After(leaf.NotAfter) {
		// Only a warning: a box that lost its clock in a power cut may be wrong, not the file.
		log.Warn().Time("not_after", leaf.NotAfter).Str("cert", certFile).Msg("TLS certificate has expired; clients will refuse it")
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}, nil
}

package sitesync

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// HubOptions shape the hub's nats-server configuration (gardend sync hub-config).
type HubOptions struct {
	// ClientListen and LeafListen are HOST:PORT; LeafAdvertise is the one address
	// boxes are told (empty: none, boxes use the address they were given).
	ClientListen, LeafListen, LeafAdvertise string
	// StoreDir holds JetStream's files; ResolverDir the account JWTs.
	StoreDir, ResolverDir string
	// LeafTLSCert and LeafTLSKey, when set, make the leaf-node listener TLS-only.
	LeafTLSCert, LeafTLSKey string
	// ServerName names the hub in logs and monitoring.
	ServerName string
	// MaxPayload bounds one message (defaults to DefaultMaxPayload).
	MaxPayload int
}

// DefaultMaxPayload bounds one NATS message on both sides: a user with a 64 KiB
// widgets document, a bed of a few hundred plants, a picture chunk.
const DefaultMaxPayload = 8 << 20

// Revoked is the revocations of the account: user keys of removed sites and when.
type Revoked = map[string]time.Time

// checkHostPort accepts HOST:PORT with a port in 1..65535.
func checkHostPort(flag, v string) error {
	host, port, err := net.SplitHostPort(v)
	if err != nil || strings.ContainsAny(host, "\"\\\n{}") {
		return fmt.Errorf("%s %q: want HOST:PORT", flag, v)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("%s %q: the port must be 1-65535", flag, v)
	}
	return nil
}

// quote is a string in nats-server's configuration syntax.
func quote(s string) string { return strconv.Quote(s) }

// HubConfig is a complete nats-server configuration for the hub: JetStream in the
// hub's domain, the client and leaf-node listeners, decentralised JWT
// authentication with a full resolver (a site added later needs no restart: its
// user JWT is signed by the account, which the hub knows), and the account JWTs
// preloaded.
func HubConfig(k *Keys, o HubOptions, revoked Revoked) (string, error) {
	if o.ClientListen == "" {
		o.ClientListen = "0.0.0.0:4222"
	}
	if o.LeafListen == "" {
		o.LeafListen = "0.0.0.0:7422"
	}
	if o.StoreDir == "" {
		o.StoreDir = "/var/lib/nats/jetstream"
	}
	if o.ResolverDir == "" {
		o.ResolverDir = "/var/lib/nats/jwt"
	}
	if o.ServerName == "" {
		o.ServerName = "gardend-hub"
	}
	if o.MaxPayload == 0 {
		o.MaxPayload = DefaultMaxPayload
	}
	if err := checkHostPort("--client-listen", o.ClientListen); err != nil {
		return "", err
	}
	if err := checkHostPort("--leaf-listen", o.LeafListen); err != nil {
		return "", err
	}
	if o.LeafAdvertise != "" {
		if err := checkHostPort("--leaf-advertise", o.LeafAdvertise); err != nil {
			return "", err
		}
	}
	if (o.LeafTLSCert == "") != (o.LeafTLSKey == "") {
		return "", fmt.Errorf("--leaf-tls-cert and --leaf-tls-key go together")
	}
	op, err := k.OperatorJWT()
	if err != nil {
		return "", err
	}
	sys, err := k.SystemAccountJWT()
	if err != nil {
		return "", err
	}
	acc, err := k.AccountJWT(revoked)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# nats-server configuration of the gardend hub (gardend sync hub-config; docs/sync.md).\n")
	w("# Generated from the keys in the office's database: running the command again\n")
	w("# gives the same keys. Start it with: nats-server -c hub.conf\n\n")
	w("server_name: %s\n", quote(o.ServerName))
	w("listen: %s\n", quote(o.ClientListen))
	w("max_payload: %d\n", o.MaxPayload)
	w("\njetstream {\n  domain: %s\n  store_dir: %s\n}\n", quote(HubDomain), quote(o.StoreDir))
	w("\nleafnodes {\n  listen: %s\n", quote(o.LeafListen))
	if o.LeafAdvertise != "" {
		w("  # The only address ever advertised to a box.\n  advertise: %s\n", quote(o.LeafAdvertise))
	} else {
		w("  # Boxes connect to the address they were given; none is advertised.\n  no_advertise: true\n")
	}
	if o.LeafTLSCert != "" {
		w("  tls {\n    cert_file: %s\n    key_file: %s\n  }\n", quote(o.LeafTLSCert), quote(o.LeafTLSKey))
	}
	w("}\n")
	w("\n# Operator mode: every account is a JWT signed by this operator; every user (a site,\n")
	w("# an office node) a JWT signed by its account. A new site's credentials work at once.\n")
	w("operator: %s\n", quote(op))
	w("system_account: %s\n", quote(publicKey(k.System)))
	w("resolver: {\n  type: full\n  dir: %s\n  allow_delete: false\n  interval: \"2m\"\n}\n", quote(o.ResolverDir))
	w("resolver_preload: {\n  %s: %s\n  %s: %s\n}\n", publicKey(k.System), quote(sys), publicKey(k.Account), quote(acc))
	return b.String(), nil
}

package cli

import (
	"errors"
	"time"

	"github.com/spf13/pflag"

	"github.com/gardend/gardend/server"
)

// fieldOptions are serve's hardening flags for unattended and shared-network boxes.
// Timeouts an operator has no reason to touch (header read, idle) stay Config-only.
type fieldOptions struct {
	loginFailLimit  int
	loginFailWindow time.Duration
	registration    server.RegistrationMode
	registerLimit   int
	registerGlobal  int
	registerWindow  time.Duration
	maxConcurrent   int
	maxHashing      int
	memoryLimit     string
	readTimeout     time.Duration
	writeTimeout    time.Duration
	bodyTimeout     time.Duration
	bodyMinRate     int64
	maxUploads      int
	maxClouds       int
	maxConns        int
	maxConnsPerAddr int
	tlsCert         string
	tlsKey          string
}

func (o *fieldOptions) addFlags(f *pflag.FlagSet) {
	o.registration = server.RegistrationOpen
	f.IntVar(&o.loginFailLimit, "login-fail-limit", server.DefaultLoginFailLimit, "failed logins allowed per --login-fail-window, per account (however its name is spelt) and per client address; then 429")
	f.DurationVar(&o.loginFailWindow, "login-fail-window", server.DefaultLoginFailWindow, "window of --login-fail-limit, counted from a key's first failure")
	f.Var((*registrationValue)(&o.registration), "registration", "who may create accounts: open (POST /register) or closed (only gardend user create)")
	f.IntVar(&o.registerLimit, "register-limit", server.DefaultRegisterLimit, "accounts POST /register may create per client address per --register-window; then 429")
	f.IntVar(&o.registerGlobal, "register-global-limit", server.DefaultRegisterGlobalLimit, "accounts POST /register may create in all per --register-window; then 429")
	f.DurationVar(&o.registerWindow, "register-window", server.DefaultRegisterWindow, "window of --register-limit and --register-global-limit")
	f.IntVar(&o.maxConcurrent, "max-concurrent", server.DefaultMaxConcurrent, "requests handled at once (their bodies read first); beyond it 503 with Retry-After (/healthz, /readyz exempt)")
	f.IntVar(&o.maxHashing, "max-hashing", server.DefaultMaxHashing(), "password hashes at once (one per core unless set); each may hold 64 MiB, so this times 64 MiB is the hashing memory budget")
	f.StringVar(&o.memoryLimit, "memory-limit", memoryLimitAuto, "soft limit of the Go heap, e.g. 384MiB: the garbage collector works harder near it (auto: GOMEMLIMIT if set, else the hashing budget + 128 MiB; off: none)")
	f.DurationVar(&o.readTimeout, "read-timeout", server.DefaultReadTimeout, "time to read a whole request, body included (raise for large images on slow links)")
	f.DurationVar(&o.writeTimeout, "write-timeout", server.DefaultWriteTimeout, "time to handle a request and write the answer (streams extend it while they progress)")
	f.DurationVar(&o.bodyTimeout, "body-timeout", server.DefaultBodyTimeout, "time a request body may take, plus a second per --body-min-rate bytes received; slower bodies get 408")
	f.Int64Var(&o.bodyMinRate, "body-min-rate", server.DefaultBodyMinRate, "slowest pace in bytes per second a request body may keep after --body-timeout (lower it for uploads over very slow links)")
	f.IntVar(&o.maxUploads, "max-uploads", server.DefaultMaxUploads, "image uploads at once; beyond it 503 with Retry-After")
	f.IntVar(&o.maxClouds, "max-cloud-responses", server.DefaultMaxCloudResponses, "point-cloud files sent at once (a quarter of them to one client address); beyond it 503 with Retry-After")
	f.IntVar(&o.maxConns, "max-conns", server.DefaultMaxConns, "open connections in all; at the cap a new one replaces an idle one, or is closed")
	f.IntVar(&o.maxConnsPerAddr, "max-conns-per-addr", server.DefaultMaxConnsPerAddr, "open connections from one client address (IPv6: per /64); not applied with --trust-proxy")
	f.StringVar(&o.tlsCert, "tls-cert", "", "PEM certificate (chain) file: serve HTTPS, TLS 1.2 or newer; needs --tls-key")
	f.StringVar(&o.tlsKey, "tls-key", "", "PEM private key file of --tls-cert")
}

// validate rejects values the server would otherwise silently replace by defaults.
func (o *fieldOptions) validate() error {
	switch {
	case o.loginFailLimit < 1:
		return errors.New("--login-fail-limit must be at least 1")
	case o.loginFailWindow <= 0:
		return errors.New("--login-fail-window must be positive (e.g. 1m)")
	case o.registerLimit < 1:
		return errors.New("--register-limit must be at least 1 (use --registration closed to stop registrations)")
	case o.registerGlobal < 1:
		return errors.New("--register-global-limit must be at least 1 (use --registration closed to stop registrations)")
	case o.registerWindow <= 0:
		return errors.New("--register-window must be positive (e.g. 1h)")
	case o.maxConcurrent < 1:
		return errors.New("--max-concurrent must be at least 1")
	case o.maxHashing < 1:
		return errors.New("--max-hashing must be at least 1")
	case o.readTimeout <= 0:
		return errors.New("--read-timeout must be positive (e.g. 2m)")
	case o.writeTimeout <= 0:
		return errors.New("--write-timeout must be positive (e.g. 2m)")
	case o.bodyTimeout <= 0:
		return errors.New("--body-timeout must be positive (e.g. 10s)")
	case o.bodyMinRate < 1:
		return errors.New("--body-min-rate must be at least 1 byte per second")
	case o.maxUploads < 1:
		return errors.New("--max-uploads must be at least 1")
	case o.maxClouds < 1:
		return errors.New("--max-cloud-responses must be at least 1")
	case o.maxConns < 1:
		return errors.New("--max-conns must be at least 1")
	case o.maxConnsPerAddr < 1:
		return errors.New("--max-conns-per-addr must be at least 1")
	}
	return nil
}

func (o *fieldOptions) apply(c *server.Config) {
	c.LoginFailLimit, c.LoginFailWindow = o.loginFailLimit, o.loginFailWindow
	c.Registration = o.registration
	c.RegisterLimit, c.RegisterGlobalLimit, c.RegisterWindow = o.registerLimit, o.registerGlobal, o.registerWindow
	c.MaxConcurrent = o.maxConcurrent
	c.MaxHashing = o.maxHashing
	c.ReadTimeout, c.WriteTimeout = o.readTimeout, o.writeTimeout
	c.BodyTimeout, c.BodyMinRate = o.bodyTimeout, o.bodyMinRate
	c.MaxUploads = o.maxUploads
	c.MaxCloudResponses = o.maxClouds
	c.MaxConns, c.MaxConnsPerAddr = o.maxConns, o.maxConnsPerAddr
	c.TLSCertFile, c.TLSKeyFile = o.tlsCert, o.tlsKey
}

// registrationValue checks the mode when the flag (or GARDEND_REGISTRATION) is set.
type registrationValue server.RegistrationMode

func (v *registrationValue) String() string { return string(*v) }
func (v *registrationValue) Type() string   { return "open|closed" }

func (v *registrationValue) Set(s string) error {
	m, err := server.ParseRegistrationMode(s)
	if err != nil {
		return err
	}
	*v = registrationValue(m)
	return nil
}

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
	tlsCert         string
	tlsKey          string
}

func (o *fieldOptions) addFlags(f *pflag.FlagSet) {
	o.registration = server.RegistrationOpen
	f.IntVar(&o.loginFailLimit, "login-fail-limit", server.DefaultLoginFailLimit, "failed logins allowed per --login-fail-window, per username and per client address; then 429")
	f.DurationVar(&o.loginFailWindow, "login-fail-window", server.DefaultLoginFailWindow, "window of --login-fail-limit, counted from a key's first failure")
	f.Var((*registrationValue)(&o.registration), "registration", "who may create accounts: open (POST /register) or closed (only gardend user create)")
	f.IntVar(&o.registerLimit, "register-limit", server.DefaultRegisterLimit, "accounts POST /register may create per client address per --register-window; then 429")
	f.IntVar(&o.registerGlobal, "register-global-limit", server.DefaultRegisterGlobalLimit, "accounts POST /register may create in all per --register-window; then 429")
	f.DurationVar(&o.registerWindow, "register-window", server.DefaultRegisterWindow, "window of --register-limit and --register-global-limit")
	f.IntVar(&o.maxConcurrent, "max-concurrent", server.DefaultMaxConcurrent, "requests handled at once; beyond it 503 with Retry-After (/healthz exempt)")
	f.IntVar(&o.maxHashing, "max-hashing", server.DefaultMaxHashing(), "password hashes at once (one per core unless set); each may hold 64 MiB, so this times 64 MiB is the hashing memory budget")
	f.StringVar(&o.memoryLimit, "memory-limit", memoryLimitAuto, "soft limit of the Go heap, e.g. 384MiB: the garbage collector works harder near it (auto: GOMEMLIMIT if set, else the hashing budget + 128 MiB; off: none)")
	f.DurationVar(&o.readTimeout, "read-timeout", server.DefaultReadTimeout, "time to read a whole request, body included (raise for large images on slow links)")
	f.DurationVar(&o.writeTimeout, "write-timeout", server.DefaultWriteTimeout, "time to handle a request and write the answer (streams extend it while they progress)")
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

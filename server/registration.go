package server

import (
	"context"
	"fmt"
	"hash/maphash"
	"net/netip"
	"time"
)

// RegistrationMode says who may create accounts through POST /register.
type RegistrationMode string

const (
	// RegistrationOpen lets anyone register (the default, as the original service).
	RegistrationOpen RegistrationMode = "open"
	// RegistrationClosed answers /register with 403; accounts come from `gardend user
	// create` instead. For boxes on a shared network.
	RegistrationClosed RegistrationMode = "closed"
)

// ParseRegistrationMode accepts "open" or "closed".
func ParseRegistrationMode(s string) (RegistrationMode, error) {
	switch m := RegistrationMode(s); m {
	case RegistrationOpen, RegistrationClosed:
		return m, nil
	}
	return "", fmt.Errorf("registration mode %q: use open or closed", s)
}

// Defaults of the registration limits: accounts created per client address, and in
// all, per RegisterWindow. A farm registers a handful of people once; a script
// registering hundreds an hour fills the disk and the hashing line.
const (
	DefaultRegisterLimit       = 20
	DefaultRegisterGlobalLimit = 200
	DefaultRegisterWindow      = time.Hour
)

func (c *Config) setRegistrationDefaults() {
	if c.RegisterLimit <= 0 {
		c.RegisterLimit = DefaultRegisterLimit
	}
	if c.RegisterGlobalLimit <= 0 {
		c.RegisterGlobalLimit = DefaultRegisterGlobalLimit
	}
	if c.RegisterWindow <= 0 {
		c.RegisterWindow = DefaultRegisterWindow
	}
}

// registrationLimits limits the accounts created per client address and in all. Only
// created accounts count; a registration reserves room before its hash, like a login.
type registrationLimits struct {
	*attemptLimits
	seed maphash.Seed
}

func newRegistrationLimits(c Config) *registrationLimits {
	return &registrationLimits{
		attemptLimits: newAttemptLimits(c.Now,
			newLimitDim(c.RegisterLimit, c.RegisterWindow, limitKeys, limitMessages{
				exhausted: "too many accounts registered from this address; wait before registering another, or ask an administrator",
				full:      "too many registrations on this server right now; wait before registering",
				busy:      "too many registrations from this address at once; try again in a moment",
			}),
			newLimitDim(c.RegisterGlobalLimit, c.RegisterWindow, 1, limitMessages{
				exhausted: "too many accounts registered on this server lately; wait before registering, or ask an administrator",
				busy:      "too many registrations at once; try again in a moment",
			})),
		seed: maphash.MakeSeed(),
	}
}

// begin reserves one registration from addr; settle it with true once the account
// was created.
func (l *registrationLimits) begin(ctx context.Context, addr netip.Addr) (reservation, error) {
	return l.attemptLimits.begin(ctx, addrKey(l.seed, addr), 0)
}

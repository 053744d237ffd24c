package store

import (
	"fmt"
	"time"
)

// LeaseStore keeps named leases, each held by one node at a time (the background
// reader's: one node of a cluster reads the beds). A node takes a lease for a while,
// renews it before it runs out and releases it when it stops; it must stop the work
// the lease guards when it could not renew it in time, as with the download queue's
// claims (pcclaims.go). Leases are measured with the store's clock.
type LeaseStore interface {
	// AcquireLease takes the lease for node until now+ttl when nobody holds it, its
	// holder's time ran out, or node holds it already (a renewal); it reports whether
	// node holds it now.
	AcquireLease(name, node string, ttl time.Duration) (bool, error)
	// ReleaseLease ends node's hold of the lease, if it has it.
	ReleaseLease(name, node string) error
}

// maxLeaseName bounds a lease's name.
const maxLeaseName = 64

// ValidateLease checks a lease's name, node and time.
func ValidateLease(name, node string, ttl time.Duration) error {
	if name == "" || len(name) > maxLeaseName {
		return Invalid("lease", fmt.Sprintf("a lease name must be 1 to %d bytes", maxLeaseName))
	}
	if err := ValidateNode(node); err != nil {
		return err
	}
	if ttl <= 0 {
		return Invalid("lease", "a lease must last a positive time")
	}
	return nil
}

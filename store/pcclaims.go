package store

import (
	"time"
)

// Claims let several nodes work one download queue: a node claims due jobs for a
// lease, and a claimed job is due for nobody until the node completes it, records its
// failure, releases it, or the lease runs out (the node died). A node must stop
// working on a job when its lease ends, or renew it first, so that at most one node
// downloads a cloud at a time. Leases are measured with the store's clock.

// ClaimLive reports whether a node holds the job at now.
func (j CloudJob) ClaimLive(now time.Time) bool {
	return j.ClaimedBy != "" && now.Before(j.ClaimUntil)
}

// DueAt is when the job is next due: its next attempt, or the end of a live claim.
func (j CloudJob) DueAt(now time.Time) time.Time {
	if j.ClaimLive(now) && j.ClaimUntil.After(j.NextAttempt) {
		return j.ClaimUntil
	}
	return j.NextAttempt
}

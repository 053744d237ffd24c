package store

import (
	"time"
)

// The point-cloud download queue lives in the database so that it survives restarts:
// one item per project and cloud (so never twice), with what computing the position
// needs and the state of its retries.

// CloudJob is one queued point-cloud download.
type CloudJob struct {
	Project string `json:"project"`
	Cloud   string `json:"cloud"`
	CloudInputs
	// Attempts counts failed attempts since the job was (re)queued.
	Attempts    int       `json:"attempts"`
	NextAttempt time.Time `json:"next_attempt"`
	LastAttempt time.Time `json:"last_attempt,omitzero"`
	LastError   string    `json:"last_error,omitempty"`
	// Failed: the job ran out of attempts and waits to be re-armed.
	Failed   bool      `json:"failed"`
	Enqueued time.Time `json:"enqueued"`
	// ClaimedBy is the node working on the job until ClaimUntil (pcclaims.go); a live
	// claim keeps the job from being due for anybody else.
	ClaimedBy  string    `json:"claimed_by,omitempty"`
	ClaimUntil time.Time `json:"claim_until,omitzero"`
}

// RetryPolicy says how failed downloads are retried.
type RetryPolicy struct {
	// MaxAttempts is how many failures a job may have before it is marked failed.
	MaxAttempts int
	// Backoff is the wait after the first failure; it doubles after each further one,
	// up to MaxBackoff.
	Backoff, MaxBackoff time.Duration
}

// Delay is the wait after the given (1-based) failed attempt.
func (p RetryPolicy) Delay(attempt int) time.Duration {
	d := p.Backoff
	for i := 1; i < attempt && d < p.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, p.MaxBackoff)
}

// Requeue is the job EnqueueClouds writes for j (Project, Cloud, CloudInputs) given
// the position and the job stored for the cloud (nil when there is none), or false
// when it writes none: a fresh position, or a job queued for the same inputs that
// is not failed, or failed less than rearm ago (rearm ≤ 0 forces). The written job
// starts over, due now; a node's live claim on the old one stays.
func Requeue(j CloudJob, pos *PlantPosition, old *CloudJob, now time.Time, rearm time.Duration) (CloudJob, bool) {
	if pos != nil && pos.CloudInputs.Equal(j.CloudInputs) {
		return CloudJob{}, false
	}
	if old == nil {
		old = &CloudJob{}
	} else if rearm > 0 && old.CloudInputs.Equal(j.CloudInputs) && (!old.Failed || now.Before(old.LastAttempt.Add(rearm))) {
		return CloudJob{}, false
	}
	nj := CloudJob{Project: j.Project, Cloud: j.Cloud, CloudInputs: j.CloudInputs, NextAttempt: now, Enqueued: now,
		LastAttempt: old.LastAttempt, LastError: old.LastError}
	if old.ClaimLive(now) {
		// The node at work keeps it: two nodes never fetch one cloud at once.
		nj.ClaimedBy, nj.ClaimUntil = old.ClaimedBy, old.ClaimUntil
	}
	return nj, true
}

// Failure is j after a failed attempt at now: due again after the policy's delay, or
// marked failed once it has had MaxAttempts; any claim on it ends. The reason is kept
// as text a store keeps (RepairText): it may quote what a server sent.
func (j CloudJob) Failure(now time.Time, reason string, p RetryPolicy) CloudJob {
	reason, _ = RepairText(reason)
	j.Attempts++
	j.LastAttempt, j.LastError = now, reason
	j.ClaimedBy, j.ClaimUntil = "", time.Time{}
	if j.Attempts >= p.MaxAttempts {
		j.Failed = true
	} else {
		j.NextAttempt = now.Add(p.Delay(j.Attempts))
	}
	return j
}

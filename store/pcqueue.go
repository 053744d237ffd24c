package store

import (
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
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

func checkJobKey(project, cloud string) error {
	if !ValidUUID(project) || !ValidUUID(cloud) {
		return Invalid("uuid", fmt.Sprintf("project %q and cloud %q must be spatial-server uuids", project, cloud))
	}
	return nil
}

// EnqueueClouds queues downloads (Project, Cloud and CloudInputs of each job are
// used) in one transaction and returns the jobs it wrote. A job is skipped when its
// project has no bed any more, when a position for the same inputs exists, or when
// it is queued for the same inputs already, unless it failed for good at least rearm
// ago. rearm ≤ 0 forces every job given to be due now, failed or backing off (an
// operator's prefetch). A written job starts over: no attempts, due now.
func (s *Store) EnqueueClouds(jobs []CloudJob, rearm time.Duration) ([]CloudJob, error) {
	for _, j := range jobs {
		if err := checkJobKey(j.Project, j.Cloud); err != nil {
			return nil, err
		}
	}
	var written []CloudJob
	err := s.db.Update(func(tx *bolt.Tx) error {
		written = nil
		now := s.now().UTC()
		b, pos := tx.Bucket(bucketCloudJobs), tx.Bucket(bucketPositions)
		for _, j := range jobs {
			key := cloudKey(j.Project, j.Cloud)
			if !projectReferenced(tx, j.Project) {
				continue
			}
			var (
				p   PlantPosition
				pp  *PlantPosition
				old CloudJob
				oj  *CloudJob
			)
			if getJSON(pos, key, &p) == nil {
				pp = &p
			}
			if getJSON(b, key, &old) == nil {
				oj = &old
			}
			nj, ok := Requeue(j, pp, oj, now, rearm)
			if !ok {
				continue
			}
			if err := putJSON(b, key, nj); err != nil {
				return err
			}
			written = append(written, nj)
		}
		return nil
	})
	return written, err
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
	if old.claimLive(now) {
		// The node at work keeps it: two nodes never fetch one cloud at once.
		nj.ClaimedBy, nj.ClaimUntil = old.ClaimedBy, old.ClaimUntil
	}
	return nj, true
}

// Failure is j after a failed attempt at now: due again after the policy's delay, or
// marked failed once it has had MaxAttempts; any claim on it ends.
func (j CloudJob) Failure(now time.Time, reason string, p RetryPolicy) CloudJob {
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

// DueCloudJobs returns up to limit jobs due now (all of them when limit ≤ 0), earliest first; next is when the
// earliest job not yet due will be (zero when none), pending the number of jobs not
// marked failed. A job claimed by a node is not due before its claim ends.
func (s *Store) DueCloudJobs(limit int) (due []CloudJob, next time.Time, pending int, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		due, next, pending = nil, time.Time{}, 0
		now := s.now()
		return eachUnder(tx, bucketCloudJobs, nil, func(j CloudJob) {
			switch at := j.dueAt(now); {
			case j.Failed:
				return
			case at.After(now):
				if next.IsZero() || at.Before(next) {
					next = at
				}
			default:
				due = append(due, j)
			}
			pending++
		})
	})
	slices.SortStableFunc(due, func(a, b CloudJob) int { return a.NextAttempt.Compare(b.NextAttempt) })
	if limit > 0 && len(due) > limit {
		due = due[:limit]
	}
	return due, next, pending, err
}

// CompleteCloudJob stores a computed position and removes its queue item, in one
// transaction. The item stays when it was queued again for other inputs meanwhile.
// A project no bed refers to any more (deleted while its cloud was downloading) is
// ErrNotFound: nothing is stored and the caller removes what it wrote.
func (s *Store) CompleteCloudJob(p PlantPosition) error {
	if err := checkJobKey(p.Project, p.Cloud); err != nil {
		return err
	}
	if p.Computed.IsZero() {
		p.Computed = s.now().UTC()
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		if !projectReferenced(tx, p.Project) {
			return fmt.Errorf("%w: no bed refers to project %s any more", ErrNotFound, p.Project)
		}
		key := cloudKey(p.Project, p.Cloud)
		if err := putJSON(tx.Bucket(bucketPositions), key, p); err != nil {
			return err
		}
		b := tx.Bucket(bucketCloudJobs)
		var j CloudJob
		if getJSON(b, key, &j) != nil {
			return nil
		}
		if j.CloudInputs.Equal(p.CloudInputs) {
			return b.Delete(key)
		}
		if j.ClaimedBy == "" {
			return nil
		}
		// The attempt for the old inputs is over: the job for the new ones is free.
		j.ClaimedBy, j.ClaimUntil = "", time.Time{}
		return putJSON(b, key, j)
	})
}

// RecordCloudFailure counts a failed attempt of the job queued for project, cloud and
// inputs in: it is due again after the policy's delay, or marked failed once it has
// had MaxAttempts. A job gone or queued again for other inputs is not counted (ok is
// false); the claim of the attempt on the latter ends, as in CompleteCloudJob, so the
// job for the new inputs is free at once. The updated job is returned.
func (s *Store) RecordCloudFailure(project, cloud string, in CloudInputs, reason string, p RetryPolicy) (j CloudJob, ok bool, err error) {
	err = s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketCloudJobs)
		key := cloudKey(project, cloud)
		j, ok = CloudJob{}, false
		if getJSON(b, key, &j) != nil {
			return nil
		}
		if !j.CloudInputs.Equal(in) {
			claimed := j.ClaimedBy != ""
			j.ClaimedBy, j.ClaimUntil = "", time.Time{}
			if claimed {
				return putJSON(b, key, j)
			}
			return nil
		}
		j = j.Failure(s.now().UTC(), reason, p)
		ok = true
		return putJSON(b, key, j)
	})
	return j, ok, err
}

// CloudJobs lists the whole queue, by project and cloud.
func (s *Store) CloudJobs() ([]CloudJob, error) {
	out := []CloudJob{}
	err := s.db.View(func(tx *bolt.Tx) error {
		return eachUnder(tx, bucketCloudJobs, nil, func(j CloudJob) { out = append(out, j) })
	})
	return out, err
}

// CloudQueueCounts counts the queued downloads: pending (due or backing off) and
// failed (out of attempts, waiting to be re-armed).
func (s *Store) CloudQueueCounts() (pending, failed int, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		pending, failed = 0, 0
		return eachUnder(tx, bucketCloudJobs, nil, func(j CloudJob) {
			if j.Failed {
				failed++
			} else {
				pending++
			}
		})
	})
	return pending, failed, err
}

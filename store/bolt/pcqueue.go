package bolt

import (
	"slices"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/gardend/gardend/store"
)

// EnqueueClouds queues downloads (Project, Cloud and CloudInputs of each job are
// used) in one transaction and returns the jobs it wrote. A job is skipped when its
// project has no bed any more, when a position for the same inputs exists, or when
// it is queued for the same inputs already, unless it failed for good at least rearm
// ago. rearm ≤ 0 forces every job given to be due now, failed or backing off (an
// operator's prefetch). A written job starts over: no attempts, due now.
func (s *Store) EnqueueClouds(jobs []store.CloudJob, rearm time.Duration) ([]store.CloudJob, error) {
	for _, j := range jobs {
		if err := store.ValidateCloudInputs(j.Project, j.Cloud, j.CloudInputs); err != nil {
			return nil, err
		}
	}
	var written []store.CloudJob
	err := s.db.Update(func(tx *bbolt.Tx) error {
		written = nil
		now := s.now().UTC()
		b, pos := tx.Bucket(bucketCloudJobs), tx.Bucket(bucketPositions)
		for _, j := range jobs {
			key := cloudKey(j.Project, j.Cloud)
			if !projectReferenced(tx, j.Project) {
				continue
			}
			var (
				p   store.PlantPosition
				pp  *store.PlantPosition
				old store.CloudJob
				oj  *store.CloudJob
			)
			if getJSON(pos, key, &p) == nil {
				pp = &p
			}
			if getJSON(b, key, &old) == nil {
				oj = &old
			}
			nj, ok := store.Requeue(j, pp, oj, now, rearm)
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

// DueCloudJobs returns up to limit jobs due now (all of them when limit ≤ 0), earliest first; next is when the
// earliest job not yet due will be (zero when none), pending the number of jobs not
// marked failed. A job claimed by a node is not due before its claim ends.
func (s *Store) DueCloudJobs(limit int) (due []store.CloudJob, next time.Time, pending int, err error) {
	err = s.db.View(func(tx *bbolt.Tx) error {
		due, next, pending = nil, time.Time{}, 0
		now := s.now()
		return eachUnder(tx, bucketCloudJobs, nil, func(j store.CloudJob) {
			switch at := j.DueAt(now); {
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
	slices.SortStableFunc(due, func(a, b store.CloudJob) int { return a.NextAttempt.Compare(b.NextAttempt) })
	if limit > 0 && len(due) > limit {
		due = due[:limit]
	}
	return due, next, pending, err
}

// CompleteCloudJob stores a computed position and removes its queue item, in one
// transaction. The item stays when it was queued again for other inputs meanwhile.
// A project no bed refers to any more (deleted while its cloud was downloading) is
// ErrNotFound: nothing is stored and the caller removes what it wrote.
func (s *Store) CompleteCloudJob(p store.PlantPosition) error {
	p, err := store.PreparePosition(p)
	if err != nil {
		return err
	}
	if p.Computed.IsZero() {
		p.Computed = s.now().UTC()
	}
	return s.db.Update(func(tx *bbolt.Tx) error {
		if !projectReferenced(tx, p.Project) {
			return store.ProjectGone(p.Project)
		}
		key := cloudKey(p.Project, p.Cloud)
		if err := putJSON(tx.Bucket(bucketPositions), key, p); err != nil {
			return err
		}
		b := tx.Bucket(bucketCloudJobs)
		var j store.CloudJob
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
func (s *Store) RecordCloudFailure(project, cloud string, in store.CloudInputs, reason string, p store.RetryPolicy) (j store.CloudJob, ok bool, err error) {
	err = s.db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketCloudJobs)
		key := cloudKey(project, cloud)
		j, ok = store.CloudJob{}, false
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
func (s *Store) CloudJobs() ([]store.CloudJob, error) {
	out := []store.CloudJob{}
	err := s.db.View(func(tx *bbolt.Tx) error {
		return eachUnder(tx, bucketCloudJobs, nil, func(j store.CloudJob) { out = append(out, j) })
	})
	return out, err
}

// CloudQueueCounts counts the queued downloads: pending (due or backing off) and
// failed (out of attempts, waiting to be re-armed).
func (s *Store) CloudQueueCounts() (pending, failed int, err error) {
	err = s.db.View(func(tx *bbolt.Tx) error {
		pending, failed = 0, 0
		return eachUnder(tx, bucketCloudJobs, nil, func(j store.CloudJob) {
			if j.Failed {
				failed++
			} else {
				pending++
			}
		})
	})
	return pending, failed, err
}

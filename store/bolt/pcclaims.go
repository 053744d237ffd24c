package bolt

import (
	"fmt"
	"slices"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/gardend/gardend/store"
)

// ClaimCloudJobs claims up to limit jobs due now (all of them when limit ≤ 0) for
// node until now+lease, earliest first, in one transaction; next and pending are as
// in DueCloudJobs, read after the claim.
func (s *Store) ClaimCloudJobs(node string, limit int, lease time.Duration) (claimed []store.CloudJob, next time.Time, pending int, err error) {
	if err := store.ValidateClaim(node, lease); err != nil {
		return nil, time.Time{}, 0, err
	}
	err = s.db.Update(func(tx *bbolt.Tx) error {
		claimed, next, pending = nil, time.Time{}, 0
		now := s.now().UTC()
		var due []store.CloudJob
		err := eachUnder(tx, bucketCloudJobs, nil, func(j store.CloudJob) {
			if !j.Failed && !j.DueAt(now).After(now) {
				due = append(due, j)
			}
		})
		if err != nil {
			return err
		}
		slices.SortStableFunc(due, func(a, b store.CloudJob) int { return a.NextAttempt.Compare(b.NextAttempt) })
		if limit > 0 && len(due) > limit {
			due = due[:limit]
		}
		b := tx.Bucket(bucketCloudJobs)
		for _, j := range due {
			j.ClaimedBy, j.ClaimUntil = node, now.Add(lease)
			if err := putJSON(b, cloudKey(j.Project, j.Cloud), j); err != nil {
				return err
			}
			claimed = append(claimed, j)
		}
		return eachUnder(tx, bucketCloudJobs, nil, func(j store.CloudJob) {
			if j.Failed {
				return
			}
			pending++
			if at := j.DueAt(now); at.After(now) && (next.IsZero() || at.Before(next)) {
				next = at
			}
		})
	})
	if err != nil {
		return nil, time.Time{}, 0, err
	}
	return claimed, next, pending, nil
}

// RenewCloudClaim extends node's claim on a job to now+lease. It reports false when
// the node holds no claim on it any more (completed, failed, released, or claimed by
// another node after the lease ran out): the node must stop working on it.
func (s *Store) RenewCloudClaim(node, project, cloud string, lease time.Duration) (bool, error) {
	if err := store.ValidateClaim(node, lease); err != nil {
		return false, err
	}
	if err := store.ValidateCloudKey(project, cloud); err != nil {
		return false, err
	}
	var ok bool
	err := s.db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketCloudJobs)
		key := cloudKey(project, cloud)
		var j store.CloudJob
		ok = false
		if getJSON(b, key, &j) != nil || j.ClaimedBy != node {
			return nil
		}
		j.ClaimUntil = s.now().UTC().Add(lease)
		ok = true
		return putJSON(b, key, j)
	})
	return ok, err
}

// ReleaseCloudClaims ends every claim node holds (a node shutting down), so its jobs
// are due again at once instead of when the leases run out; the attempts are not
// counted. It returns how many claims it ended.
func (s *Store) ReleaseCloudClaims(node string) (int, error) {
	if err := store.ValidateNode(node); err != nil {
		return 0, err
	}
	var n int
	err := s.db.Update(func(tx *bbolt.Tx) error {
		n = 0
		var held []store.CloudJob
		if err := eachUnder(tx, bucketCloudJobs, nil, func(j store.CloudJob) {
			if j.ClaimedBy == node {
				held = append(held, j)
			}
		}); err != nil {
			return err
		}
		b := tx.Bucket(bucketCloudJobs)
		for _, j := range held {
			j.ClaimedBy, j.ClaimUntil = "", time.Time{}
			if err := putJSON(b, cloudKey(j.Project, j.Cloud), j); err != nil {
				return fmt.Errorf("release %s/%s: %w", j.Project, j.Cloud, err)
			}
		}
		n = len(held)
		return nil
	})
	return n, err
}

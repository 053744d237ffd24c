package postgres

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gardend/gardend/store"
)

// Plant positions and the download queue, per project and cloud. A project's row
// (projects) exists while some bed refers to it; positions and jobs hang off it with
// ON DELETE CASCADE, so they go with the project's last bed.

// inputs are the columns of store.CloudInputs: the transform as two arrays (NULL
// when there is none) and the origin.
type inputs struct {
	frame                 string
	translation, rotation []float64
	lat, lon              float64
}

func inputsOf(in store.CloudInputs) inputs {
	v := inputs{frame: in.Frame, lat: in.Origin.Lat, lon: in.Origin.Lon}
	if in.Transform != nil {
		v.translation = in.Transform.Translation[:]
		v.rotation = in.Transform.Rotation[:]
	}
	return v
}

func (v inputs) cloudInputs() (store.CloudInputs, error) {
	in := store.CloudInputs{Frame: v.frame, Origin: store.LatLon{Lat: v.lat, Lon: v.lon}}
	if v.translation == nil {
		return in, nil
	}
	var t store.Transform
	if len(v.translation) != len(t.Translation) || len(v.rotation) != len(t.Rotation) {
		return in, fmt.Errorf("stored transform has %d+%d values, want 3+4", len(v.translation), len(v.rotation))
	}
	copy(t.Translation[:], v.translation)
	copy(t.Rotation[:], v.rotation)
	in.Transform = &t
	return in, nil
}

func (v *inputs) dest() []any { return []any{&v.frame, &v.translation, &v.rotation, &v.lat, &v.lon} }
func (v inputs) args() []any  { return []any{v.frame, v.translation, v.rotation, v.lat, v.lon} }

const (
	inputColumns    = `frame, translation, rotation, origin_lat, origin_lon`
	positionColumns = `project, cloud, ` + inputColumns + `, latitude, longitude, reason, points, computed`
	jobColumns      = `project, cloud, ` + inputColumns + `, attempts, next_attempt, last_attempt, last_error, failed, enqueued, claimed_by, claim_until`
)

func scanPosition(row pgx.Row) (store.PlantPosition, error) {
	var (
		p        store.PlantPosition
		in       inputs
		lat, lon *float64
	)
	dest := append([]any{&p.Project, &p.Cloud}, in.dest()...)
	dest = append(dest, &lat, &lon, &p.Reason, &p.Points, &p.Computed)
	if err := row.Scan(dest...); err != nil {
		return p, err
	}
	var err error
	p.CloudInputs, err = in.cloudInputs()
	if lat != nil && lon != nil {
		p.Position = &store.LatLon{Lat: *lat, Lon: *lon}
	}
	p.Computed = p.Computed.UTC()
	return p, err
}

func scanJob(row pgx.Row) (store.CloudJob, error) {
	var (
		j          store.CloudJob
		in         inputs
		last, till *time.Time
	)
	dest := append([]any{&j.Project, &j.Cloud}, in.dest()...)
	dest = append(dest, &j.Attempts, &j.NextAttempt, &last, &j.LastError, &j.Failed, &j.Enqueued, &j.ClaimedBy, &till)
	if err := row.Scan(dest...); err != nil {
		return j, err
	}
	var err error
	j.CloudInputs, err = in.cloudInputs()
	j.NextAttempt, j.Enqueued = j.NextAttempt.UTC(), j.Enqueued.UTC()
	if last != nil {
		j.LastAttempt = last.UTC()
	}
	if till != nil {
		j.ClaimUntil = till.UTC()
	}
	return j, err
}

func collectJobs(rows pgx.Rows, err error) ([]store.CloudJob, error) {
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.CloudJob, error) { return scanJob(r) })
	if out == nil && err == nil {
		out = []store.CloudJob{}
	}
	return out, err
}

// nullTime is NULL for the zero time.
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = ts(t)
	return &t
}

// CloudState reads a project's positions and queued downloads in one snapshot.
func (s *Store) CloudState(project string) (store.CloudState, error) {
	var st store.CloudState
	err := s.read(func(ctx context.Context, tx pgx.Tx) error {
		st = store.CloudState{Positions: map[string]store.PlantPosition{}, Jobs: map[string]store.CloudJob{}}
		rows, err := tx.Query(ctx, `SELECT `+positionColumns+` FROM plant_positions WHERE project = $1`, project)
		if err != nil {
			return err
		}
		ps, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.PlantPosition, error) { return scanPosition(r) })
		if err != nil {
			return err
		}
		for _, p := range ps {
			st.Positions[p.Cloud] = p
		}
		js, err := collectJobs(tx.Query(ctx, `SELECT `+jobColumns+` FROM cloud_jobs WHERE project = $1`, project))
		for _, j := range js {
			st.Jobs[j.Cloud] = j
		}
		return err
	})
	return st, err
}

// EnqueueClouds queues downloads with the rules of the bbolt backend. The projects'
// rows are locked first (FOR NO KEY UPDATE, in uuid order): enqueuers of one project
// run one after the other, so the check of the queued job and of the position against
// the write cannot interleave with another enqueue, a completion (which takes the
// project FOR SHARE) or the deletion of the project's last bed (FOR UPDATE). A project
// without a row has no bed, and its jobs are skipped.
func (s *Store) EnqueueClouds(jobs []store.CloudJob, rearm time.Duration) ([]store.CloudJob, error) {
	for _, j := range jobs {
		if err := store.ValidateCloudInputs(j.Project, j.Cloud, j.CloudInputs); err != nil {
			return nil, err
		}
	}
	var written []store.CloudJob
	err := s.write(func(ctx context.Context, tx pgx.Tx) error {
		written = nil
		now := ts(s.now())
		projects := make([]string, 0, len(jobs))
		for _, j := range jobs {
			projects = append(projects, j.Project)
		}
		rows, err := tx.Query(ctx, `SELECT uuid FROM projects WHERE uuid = ANY($1) ORDER BY uuid FOR NO KEY UPDATE`, projects)
		if err != nil {
			return err
		}
		refs, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		referenced := make(map[string]bool, len(refs))
		for _, p := range refs {
			referenced[p] = true
		}
		for _, j := range jobs {
			if !referenced[j.Project] {
				continue
			}
			var (
				pos *store.PlantPosition
				old *store.CloudJob
			)
			p, err := scanPosition(tx.QueryRow(ctx, `SELECT `+positionColumns+` FROM plant_positions WHERE project = $1 AND cloud = $2`, j.Project, j.Cloud))
			switch {
			case err == nil:
				pos = &p
			case err != pgx.ErrNoRows:
				return err
			}
			o, err := scanJob(tx.QueryRow(ctx, `SELECT `+jobColumns+` FROM cloud_jobs WHERE project = $1 AND cloud = $2`, j.Project, j.Cloud))
			switch {
			case err == nil:
				old = &o
			case err != pgx.ErrNoRows:
				return err
			}
			nj, ok := store.Requeue(j, pos, old, now, rearm)
			if !ok {
				continue
			}
			if err := putJob(ctx, tx, nj); err != nil {
				return err
			}
			written = append(written, nj)
		}
		return nil
	})
	return written, err
}

// putJob writes j whole, inserting or replacing.
func putJob(ctx context.Context, tx pgx.Tx, j store.CloudJob) error {
	args := append([]any{j.Project, j.Cloud}, inputsOf(j.CloudInputs).args()...)
	args = append(args, j.Attempts, ts(j.NextAttempt), nullTime(j.LastAttempt), j.LastError, j.Failed, ts(j.Enqueued), j.ClaimedBy, nullTime(j.ClaimUntil))
	_, err := tx.Exec(ctx, `INSERT INTO cloud_jobs (`+jobColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
		ON CONFLICT (project, cloud) DO UPDATE SET
			frame = excluded.frame, translation = excluded.translation, rotation = excluded.rotation,
			origin_lat = excluded.origin_lat, origin_lon = excluded.origin_lon,
			attempts = excluded.attempts, next_attempt = excluded.next_attempt, last_attempt = excluded.last_attempt,
			last_error = excluded.last_error, failed = excluded.failed, enqueued = excluded.enqueued,
			claimed_by = excluded.claimed_by, claim_until = excluded.claim_until`, args...)
	return err
}

// dueWhere selects the jobs due at $1: not failed, next attempt reached, no live claim.
const dueWhere = `NOT failed AND next_attempt <= $1 AND (claimed_by = '' OR claim_until IS NULL OR claim_until <= $1)`

// queueOutlook returns when the earliest job not due at now will be (zero when none)
// and how many jobs are not failed.
func queueOutlook(ctx context.Context, q querier, now time.Time) (next time.Time, pending int, err error) {
	var at *time.Time
	err = q.QueryRow(ctx, `SELECT
			min(CASE WHEN claimed_by <> '' AND claim_until > $1 THEN greatest(next_attempt, claim_until) ELSE next_attempt END)
				FILTER (WHERE NOT (`+dueWhere+`)),
			count(*)
		FROM cloud_jobs WHERE NOT failed`, now).Scan(&at, &pending)
	if at != nil {
		next = at.UTC()
	}
	return next, pending, err
}

// DueCloudJobs returns up to limit jobs due now (all of them when limit ≤ 0),
// earliest first (then by project and cloud); next is when the earliest job not yet
// due will be (zero when none), pending the number of jobs not marked failed. A job
// claimed by a node is not due before its claim ends.
func (s *Store) DueCloudJobs(limit int) (due []store.CloudJob, next time.Time, pending int, err error) {
	err = s.read(func(ctx context.Context, tx pgx.Tx) (err error) {
		now := ts(s.now())
		due, err = collectJobs(tx.Query(ctx, `SELECT `+jobColumns+` FROM cloud_jobs WHERE `+dueWhere+`
			ORDER BY next_attempt, project, cloud LIMIT $2`, now, limitArg(limit)))
		if err != nil {
			return err
		}
		next, pending, err = queueOutlook(ctx, tx, now)
		return err
	})
	if len(due) == 0 {
		due = nil
	}
	return due, next, pending, err
}

// limitArg turns "≤ 0: all" into a LIMIT argument (NULL is no limit).
func limitArg(limit int) *int {
	if limit <= 0 {
		return nil
	}
	return &limit
}

// ClaimCloudJobs claims up to limit due jobs for node until now+lease. FOR UPDATE
// SKIP LOCKED: nodes claiming at once each take different jobs and never wait for one
// another; a job another node is claiming right now is simply not this node's.
func (s *Store) ClaimCloudJobs(node string, limit int, lease time.Duration) (claimed []store.CloudJob, next time.Time, pending int, err error) {
	if err := store.ValidateClaim(node, lease); err != nil {
		return nil, time.Time{}, 0, err
	}
	err = s.write(func(ctx context.Context, tx pgx.Tx) (err error) {
		now := ts(s.now())
		claimed, err = collectJobs(tx.Query(ctx, `WITH c AS (
				SELECT project, cloud FROM cloud_jobs WHERE `+dueWhere+`
				ORDER BY next_attempt, project, cloud LIMIT $2 FOR UPDATE SKIP LOCKED)
			UPDATE cloud_jobs j SET claimed_by = $3, claim_until = $4
			FROM c WHERE j.project = c.project AND j.cloud = c.cloud
			RETURNING `+prefixed("j.", jobColumns), now, limitArg(limit), node, ts(now.Add(lease))))
		if err != nil {
			return err
		}
		s.at("claimed")
		next, pending, err = queueOutlook(ctx, tx, now)
		return err
	})
	if err != nil {
		return nil, time.Time{}, 0, err
	}
	sortJobs(claimed)
	if len(claimed) == 0 {
		claimed = nil
	}
	return claimed, next, pending, nil
}

// RenewCloudClaim extends node's claim on a job to now+lease; false when the node
// holds no claim on it any more and must stop working on it.
func (s *Store) RenewCloudClaim(node, project, cloud string, lease time.Duration) (bool, error) {
	if err := store.ValidateClaim(node, lease); err != nil {
		return false, err
	}
	if err := store.ValidateCloudKey(project, cloud); err != nil {
		return false, err
	}
	var ok bool
	err := s.do(func(ctx context.Context) error {
		tag, err := s.pool.Exec(ctx, `UPDATE cloud_jobs SET claim_until = $4
			WHERE project = $1 AND cloud = $2 AND claimed_by = $3`, project, cloud, node, ts(s.now().Add(lease)))
		ok = tag.RowsAffected() > 0
		return err
	})
	return ok, err
}

// ReleaseCloudClaims ends every claim node holds, so its jobs are due again at once.
func (s *Store) ReleaseCloudClaims(node string) (int, error) {
	if err := store.ValidateNode(node); err != nil {
		return 0, err
	}
	var n int
	err := s.write(func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE cloud_jobs SET claimed_by = '', claim_until = NULL WHERE claimed_by = $1`, node)
		n = int(tag.RowsAffected())
		return err
	})
	return n, err
}

// CompleteCloudJob stores a computed position and removes its queue item, in one
// transaction; the item stays (unclaimed) when it was queued again for other inputs
// meanwhile. The project's row is taken FOR SHARE: a project no bed refers to any
// more is ErrNotFound, and it cannot go while the position is written.
func (s *Store) CompleteCloudJob(p store.PlantPosition) error {
	p, err := store.PreparePosition(p)
	if err != nil {
		return err
	}
	if p.Computed.IsZero() {
		p.Computed = s.now()
	}
	return s.write(func(ctx context.Context, tx pgx.Tx) error {
		var found bool
		if err := tx.QueryRow(ctx, `SELECT true FROM projects WHERE uuid = $1 FOR SHARE`, p.Project).Scan(&found); err != nil {
			if err == pgx.ErrNoRows {
				return store.ProjectGone(p.Project)
			}
			return err
		}
		var lat, lon *float64
		if p.Position != nil {
			lat, lon = &p.Position.Lat, &p.Position.Lon
		}
		args := append([]any{p.Project, p.Cloud}, inputsOf(p.CloudInputs).args()...)
		args = append(args, lat, lon, p.Reason, p.Points, ts(p.Computed))
		if _, err := tx.Exec(ctx, `INSERT INTO plant_positions (`+positionColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
			ON CONFLICT (project, cloud) DO UPDATE SET
				frame = excluded.frame, translation = excluded.translation, rotation = excluded.rotation,
				origin_lat = excluded.origin_lat, origin_lon = excluded.origin_lon,
				latitude = excluded.latitude, longitude = excluded.longitude, reason = excluded.reason,
				points = excluded.points, computed = excluded.computed`, args...); err != nil {
			return err
		}
		j, err := scanJob(tx.QueryRow(ctx, `SELECT `+jobColumns+` FROM cloud_jobs WHERE project = $1 AND cloud = $2 FOR UPDATE`, p.Project, p.Cloud))
		switch {
		case err == pgx.ErrNoRows:
			return nil
		case err != nil:
			return err
		case j.CloudInputs.Equal(p.CloudInputs):
			_, err = tx.Exec(ctx, `DELETE FROM cloud_jobs WHERE project = $1 AND cloud = $2`, p.Project, p.Cloud)
			return err
		}
		// The attempt for the old inputs is over: the job for the new ones is free.
		_, err = tx.Exec(ctx, `UPDATE cloud_jobs SET claimed_by = '', claim_until = NULL WHERE project = $1 AND cloud = $2`, p.Project, p.Cloud)
		return err
	})
}

// RecordCloudFailure counts a failed attempt of the job queued for project, cloud and
// inputs in, with the policy of the bbolt backend; the job's row is locked (FOR
// UPDATE) between reading and writing it. A job gone or queued again for other inputs
// is left alone (ok is false).
func (s *Store) RecordCloudFailure(project, cloud string, in store.CloudInputs, reason string, p store.RetryPolicy) (store.CloudJob, bool, error) {
	var (
		j  store.CloudJob
		ok bool
	)
	err := s.write(func(ctx context.Context, tx pgx.Tx) error {
		var err error
		j, ok = store.CloudJob{}, false
		j, err = scanJob(tx.QueryRow(ctx, `SELECT `+jobColumns+` FROM cloud_jobs WHERE project = $1 AND cloud = $2 FOR UPDATE`, project, cloud))
		switch {
		case err == pgx.ErrNoRows:
			j = store.CloudJob{}
			return nil
		case err != nil:
			return err
		case !j.CloudInputs.Equal(in):
			// The attempt for the old inputs is over: the job for the new ones is free.
			j = store.CloudJob{}
			_, err = tx.Exec(ctx, `UPDATE cloud_jobs SET claimed_by = '', claim_until = NULL WHERE project = $1 AND cloud = $2 AND claimed_by <> ''`, project, cloud)
			return err
		}
		j = j.Failure(ts(s.now()), reason, p)
		ok = true
		return putJob(ctx, tx, j)
	})
	if err != nil {
		return store.CloudJob{}, false, err
	}
	return j, ok, nil
}

// CloudJobs lists the whole queue, by project and cloud.
func (s *Store) CloudJobs() ([]store.CloudJob, error) {
	var out []store.CloudJob
	err := s.do(func(ctx context.Context) (err error) {
		out, err = collectJobs(s.pool.Query(ctx, `SELECT `+jobColumns+` FROM cloud_jobs ORDER BY project, cloud`))
		return err
	})
	return out, err
}

// prefixed qualifies each column of a column list with prefix ("j.").
func prefixed(prefix, columns string) string {
	parts := strings.Split(columns, ", ")
	for i, c := range parts {
		parts[i] = prefix + c
	}
	return strings.Join(parts, ", ")
}

// sortJobs orders jobs as the queue is scanned: by next attempt, project and cloud.
func sortJobs(jobs []store.CloudJob) {
	slices.SortFunc(jobs, func(a, b store.CloudJob) int {
		return cmp.Or(a.NextAttempt.Compare(b.NextAttempt), strings.Compare(a.Project, b.Project), strings.Compare(a.Cloud, b.Cloud))
	})
}

// CloudQueueCounts counts the queued downloads, pending and failed, in one statement.
func (s *Store) CloudQueueCounts() (pending, failed int, err error) {
	err = s.do(func(ctx context.Context) error {
		return s.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE NOT failed), count(*) FILTER (WHERE failed) FROM cloud_jobs`).Scan(&pending, &failed)
	})
	return pending, failed, err
}

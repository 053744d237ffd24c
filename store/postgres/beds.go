package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/gardend/gardend/store"
)

const bedColumns = `b.id, b.garden_id, b.project, b.name`

func scanBed(row pgx.Row) (b store.Bed, err error) {
	err = row.Scan(&b.ID, &b.Garden, &b.UUID, &b.Name)
	return b, err
}

func collectBeds(rows pgx.Rows, err error) ([]store.Bed, error) {
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Bed, error) { return scanBed(r) })
	if out == nil && err == nil {
		out = []store.Bed{}
	}
	return out, err
}

// CreateBed registers the project uuid as a bed of the garden. The same uuid twice in
// one garden is ErrConflict (a unique constraint).
func (s *Store) CreateBed(gardenID uint64, uuid, name string) (store.Bed, error) {
	return s.CreateBedUpTo(gardenID, uuid, name, 0)
}

// CreateBedUpTo is CreateBed with at most maxBeds beds per garden (0: no limit). The
// garden's row is locked first: against deletion (FOR KEY SHARE), and with a limit
// against other bed creations in the same garden too (FOR NO KEY UPDATE), so that
// counting and inserting are one step; then the project's row is created or locked.
// That is the order every writer follows (company → garden → project), so a
// concurrent deletion of the project's last bed either finishes first or sees this
// bed.
func (s *Store) CreateBedUpTo(gardenID uint64, uuid, name string, maxBeds int) (store.Bed, error) {
	return s.CreateBedFor(0, gardenID, uuid, name, maxBeds, nil)
}

// CreateBedFor is CreateBedUpTo that lets allow refuse a project other gardens have
// beds of, seeing what userID holds on each (store.BedStore). The project's row is
// locked before the other beds are read, so two gardens registering a new project at
// once take turns: the second sees the first's bed.
func (s *Store) CreateBedFor(userID, gardenID uint64, uuid, name string, maxBeds int, allow func([]store.ProjectBed) error) (store.Bed, error) {
	b := store.Bed{Garden: gardenID, UUID: uuid, Name: name}
	if err := b.Validate(); err != nil {
		return store.Bed{}, err
	}
	lock := `FOR KEY SHARE`
	if maxBeds > 0 {
		lock = `FOR NO KEY UPDATE`
	}
	err := s.write(func(ctx context.Context, tx pgx.Tx) error {
		var found bool
		err := tx.QueryRow(ctx, `SELECT true FROM gardens WHERE id = $1 `+lock, gardenID).Scan(&found)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("garden %d: %w", gardenID, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if maxBeds > 0 {
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM beds WHERE garden_id = $1`, gardenID).Scan(&n); err != nil {
				return err
			}
			var taken bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM beds WHERE garden_id = $1 AND project = $2)`, gardenID, uuid).Scan(&taken); err != nil {
				return err
			}
			// A taken uuid is the conflict it would be without the limit.
			if !taken && n >= maxBeds {
				return store.TooManyBeds(gardenID, n, maxBeds)
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO projects (uuid) VALUES ($1) ON CONFLICT (uuid) DO UPDATE SET uuid = excluded.uuid`, uuid); err != nil {
			return err
		}
		if allow != nil {
			others, err := otherProjectBeds(ctx, tx, uuid, gardenID, userID)
			if err != nil {
				return err
			}
			if len(others) > 0 {
				if err := allow(others); err != nil {
					return err
				}
			}
		}
		err = tx.QueryRow(ctx, `INSERT INTO beds (garden_id, project, name) VALUES ($1, $2, $3) RETURNING id`, gardenID, uuid, name).Scan(&b.ID)
		if isUnique(err) {
			return store.BedUUIDTaken(gardenID, uuid)
		}
		if err != nil {
			return err
		}
		return recordChange(ctx, tx, s.now(), store.KindBed, b.ID, gardenID, false)
	})
	if err != nil {
		return store.Bed{}, err
	}
	return b, nil
}

// otherProjectBeds are the beds of the project outside gardenID, with what userID
// holds on their gardens.
func otherProjectBeds(ctx context.Context, tx pgx.Tx, uuid string, gardenID, userID uint64) ([]store.ProjectBed, error) {
	rows, err := tx.Query(ctx, `SELECT `+bedColumns+`, g.company_id, `+accessColumns("g.company_id", "g.id", "$3")+`
		FROM beds b JOIN gardens g ON g.id = b.garden_id
		WHERE b.project = $1 AND b.garden_id <> $2 ORDER BY b.id`, uuid, gardenID, userID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (pb store.ProjectBed, err error) {
		var (
			company, garden *string
			member          bool
		)
		err = r.Scan(&pb.Bed.ID, &pb.Bed.Garden, &pb.Bed.UUID, &pb.Bed.Name, &pb.Company, &company, &garden, &member)
		pb.Access = accessOf(company, garden, member)
		return pb, err
	})
}

// BedsOfProject returns the beds registered for the project, in every garden, by
// ascending id (index beds_project).
func (s *Store) BedsOfProject(uuid string) ([]store.Bed, error) {
	var out []store.Bed
	err := s.do(func(ctx context.Context) (err error) {
		out, err = collectBeds(s.pool.Query(ctx, `SELECT `+bedColumns+` FROM beds b WHERE b.project = $1 ORDER BY b.id`, uuid))
		return err
	})
	return out, err
}

// Bed returns a bed of the garden.
func (s *Store) Bed(gardenID, bedID uint64) (store.Bed, error) {
	var b store.Bed
	err := s.do(func(ctx context.Context) (err error) {
		b, err = bedOf(ctx, s.pool, gardenID, bedID)
		return err
	})
	return b, err
}

// bedOf loads a bed addressed under a garden: a bed of another garden is ErrNotFound.
func bedOf(ctx context.Context, q querier, gardenID, bedID uint64) (store.Bed, error) {
	b, err := scanBed(q.QueryRow(ctx, `SELECT `+bedColumns+` FROM beds b WHERE b.id = $1`, bedID))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Bed{}, fmt.Errorf("bed %d: %w", bedID, store.ErrNotFound)
	}
	if err != nil {
		return store.Bed{}, err
	}
	if b.Garden != gardenID {
		return store.Bed{}, fmt.Errorf("bed %d of garden %d: %w", bedID, gardenID, store.ErrNotFound)
	}
	return b, nil
}

// BedsOfGarden returns the garden's beds by ascending id.
func (s *Store) BedsOfGarden(gardenID uint64) ([]store.Bed, error) {
	var out []store.Bed
	err := s.read(func(ctx context.Context, tx pgx.Tx) (err error) {
		if _, err := gardenByID(ctx, tx, gardenID); err != nil {
			return err
		}
		out, err = collectBeds(tx.Query(ctx, `SELECT `+bedColumns+` FROM beds b WHERE b.garden_id = $1 ORDER BY b.id`, gardenID))
		return err
	})
	return out, err
}

// Beds returns every bed of every garden, by ascending id.
func (s *Store) Beds() ([]store.Bed, error) {
	var out []store.Bed
	err := s.do(func(ctx context.Context) (err error) {
		out, err = collectBeds(s.pool.Query(ctx, `SELECT `+bedColumns+` FROM beds b ORDER BY b.id`))
		return err
	})
	return out, err
}

// DeleteBed removes a bed of the garden. Removed.BedUUIDs holds its uuid when no other
// bed refers to that project any more; its positions and queued downloads went with it.
func (s *Store) DeleteBed(gardenID, bedID uint64) (store.Removed, error) {
	var r store.Removed
	err := s.write(func(ctx context.Context, tx pgx.Tx) error {
		r = store.Removed{}
		// The garden first, in the writers' lock order.
		if _, err := tx.Exec(ctx, `SELECT 1 FROM gardens WHERE id = $1 FOR KEY SHARE`, gardenID); err != nil {
			return err
		}
		b, err := bedOf(ctx, tx, gardenID, bedID)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM beds WHERE id = $1`, bedID); err != nil {
			return err
		}
		if r.BedUUIDs, err = settleProjects(ctx, tx, []string{b.UUID}); err != nil {
			return err
		}
		return recordChange(ctx, tx, s.now(), store.KindBed, bedID, gardenID, true)
	})
	if err != nil {
		return store.Removed{}, err
	}
	return r, nil
}

// BedStatuses lists every bed with the counts of its project's positions and queued
// downloads, in one statement.
func (s *Store) BedStatuses() ([]store.BedStatus, error) {
	var out []store.BedStatus
	err := s.do(func(ctx context.Context) error {
		rows, err := s.pool.Query(ctx, `SELECT `+bedColumns+`,
				coalesce(pp.positions, 0), coalesce(pp.none, 0), coalesce(j.queued, 0), coalesce(j.failed, 0)
			FROM beds b
			LEFT JOIN (SELECT project, count(latitude) AS positions, count(*) - count(latitude) AS none
				FROM plant_positions GROUP BY project) pp ON pp.project = b.project
			LEFT JOIN (SELECT project, count(*) FILTER (WHERE NOT failed) AS queued, count(*) FILTER (WHERE failed) AS failed
				FROM cloud_jobs GROUP BY project) j ON j.project = b.project
			ORDER BY b.id`)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (st store.BedStatus, err error) {
			err = r.Scan(&st.ID, &st.Bed.Garden, &st.UUID, &st.Name, &st.Positions, &st.NoPosition, &st.Queued, &st.Failed)
			st.Garden = st.Bed.Garden
			return st, err
		})
		if out == nil {
			out = []store.BedStatus{}
		}
		return err
	})
	return out, err
}

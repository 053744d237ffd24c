package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/gardend/gardend/store"
)

// CreateCompany stores a new company and makes creatorID its admin in the same
// transaction, so no company ever exists without an admin.
func (s *Store) CreateCompany(creatorID uint64, name string) (store.Company, error) {
	c := store.Company{Name: name}
	if err := c.Validate(); err != nil {
		return store.Company{}, err
	}
	err := s.write(func(ctx context.Context, tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `INSERT INTO companies (name) VALUES ($1) RETURNING id`, name).Scan(&c.ID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO company_permissions (company_id, user_id, level) VALUES ($1, $2, 'a')`, c.ID, creatorID)
		if isForeignKey(err) {
			return fmt.Errorf("user %d: %w", creatorID, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if err := recordChange(ctx, tx, s.now(), store.KindCompany, c.ID, 0, false); err != nil {
			return err
		}
		return recordChange(ctx, tx, s.now(), store.KindCompanyPermission, c.ID, creatorID, false)
	})
	if err != nil {
		return store.Company{}, err
	}
	return c, nil
}

func companyByID(ctx context.Context, q querier, id uint64) (store.Company, error) {
	c := store.Company{ID: id}
	err := q.QueryRow(ctx, `SELECT name FROM companies WHERE id = $1`, id).Scan(&c.Name)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Company{}, fmt.Errorf("company %d: %w", id, store.ErrNotFound)
	}
	return c, err
}

// Company returns the company with id.
func (s *Store) Company(id uint64) (store.Company, error) {
	var c store.Company
	err := s.do(func(ctx context.Context) (err error) {
		c, err = companyByID(ctx, s.pool, id)
		return err
	})
	return c, err
}

func collectCompanies(rows pgx.Rows, err error) ([]store.Company, error) {
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (c store.Company, err error) {
		err = r.Scan(&c.ID, &c.Name)
		return c, err
	})
	if out == nil && err == nil {
		out = []store.Company{}
	}
	return out, err
}

// Companies returns every company by id (a site admin's view).
func (s *Store) Companies() ([]store.Company, error) { return s.CompaniesPage(store.Page{}) }

// CompaniesOfUser returns the companies on which the user holds a company permission,
// by id. Garden permissions do not count (decisions.md: GET /companies).
func (s *Store) CompaniesOfUser(userID uint64) ([]store.Company, error) {
	return s.CompaniesOfUserPage(userID, store.Page{})
}

// DeleteCompany removes the company with its gardens, their beds, images and
// coordinates, and every permission on any of them, in one transaction: the foreign
// keys cascade. The caller deletes what Removed lists after it returns.
func (s *Store) DeleteCompany(id uint64) (store.Removed, error) {
	return s.deleteGardens(func(ctx context.Context, tx pgx.Tx) error {
		var found bool
		err := tx.QueryRow(ctx, `SELECT true FROM companies WHERE id = $1 FOR UPDATE`, id).Scan(&found)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("company %d: %w", id, store.ErrNotFound)
		}
		return err
	}, `g.company_id = $1`, `DELETE FROM companies WHERE id = $1`, id, store.Change{Kind: store.KindCompany, ID: id})
}

// deleteGardens runs a deletion in one transaction: lock checks and locks the record
// (in the order company → gardens → projects that every writer follows, so
// concurrent deletions and bed creations cannot deadlock), then del deletes it with
// the gardens matching where, and what they leave outside the database, or in
// projects no bed refers to any more, is settled before the commit.
func (s *Store) deleteGardens(lock func(ctx context.Context, tx pgx.Tx) error, where, del string, id uint64, gone store.Change) (store.Removed, error) {
	var r store.Removed
	err := s.write(func(ctx context.Context, tx pgx.Tx) error {
		r = store.Removed{}
		if err := lock(ctx, tx); err != nil {
			return err
		}
		paths, projects, err := removedWith(ctx, tx, where, id)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, del, id); err != nil {
			return err
		}
		r.ImagePaths = paths
		if r.BedUUIDs, err = settleProjects(ctx, tx, projects); err != nil {
			return err
		}
		return recordChange(ctx, tx, s.now(), gone.Kind, gone.ID, gone.Ref, true)
	})
	if err != nil {
		return store.Removed{}, err
	}
	return r, nil
}

// removedWith locks the gardens matching where (with $1) and returns their image
// paths, by garden id, and the projects of their beds: what a deletion of those
// gardens leaves to settle.
func removedWith(ctx context.Context, tx pgx.Tx, where string, arg uint64) (paths, projects []string, err error) {
	rows, err := tx.Query(ctx, `SELECT g.image_path FROM gardens g WHERE `+where+` ORDER BY g.id FOR UPDATE`, arg)
	if err != nil {
		return nil, nil, err
	}
	all, err := pgx.CollectRows(rows, pgx.RowTo[*string])
	if err != nil {
		return nil, nil, err
	}
	for _, p := range all {
		if p != nil {
			paths = append(paths, *p)
		}
	}
	rows, err = tx.Query(ctx, `SELECT DISTINCT b.project FROM beds b JOIN gardens g ON g.id = b.garden_id WHERE `+where, arg)
	if err != nil {
		return nil, nil, err
	}
	projects, err = pgx.CollectRows(rows, pgx.RowTo[string])
	return paths, projects, err
}

// settleProjects deletes, among the projects of deleted beds, those no bed refers to
// any more, with their plant positions and queued downloads (the foreign keys
// cascade), and returns them sorted. The project rows are locked first (in uuid
// order): a bed created for one of them meanwhile either committed before the lock,
// and the DELETE's fresh snapshot sees it, or waits for this transaction and then
// creates the project again.
func settleProjects(ctx context.Context, tx pgx.Tx, projects []string) ([]string, error) {
	if len(projects) == 0 {
		return nil, nil
	}
	if _, err := tx.Exec(ctx, `SELECT uuid FROM projects WHERE uuid = ANY($1) ORDER BY uuid FOR UPDATE`, projects); err != nil {
		return nil, err
	}
	rows, err := tx.Query(ctx, `DELETE FROM projects p WHERE p.uuid = ANY($1)
		AND NOT EXISTS (SELECT 1 FROM beds b WHERE b.project = p.uuid) RETURNING p.uuid`, projects)
	if err != nil {
		return nil, err
	}
	gone, err := pgx.CollectRows(rows, pgx.RowTo[string])
	slices.Sort(gone)
	return gone, err
}

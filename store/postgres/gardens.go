package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/gardend/gardend/store"
)

const gardenColumns = `g.id, g.name, g.image_path, g.company_id`

func scanGarden(row pgx.Row) (g store.Garden, err error) {
	err = row.Scan(&g.ID, &g.Name, &g.ImagePath, &g.Company)
	return g, err
}

func collectGardens(rows pgx.Rows, err error) ([]store.Garden, error) {
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Garden, error) { return scanGarden(r) })
	if out == nil && err == nil {
		out = []store.Garden{}
	}
	return out, err
}

// CreateGarden stores a new garden of the company; the foreign key refuses a company
// that does not exist or is being deleted.
func (s *Store) CreateGarden(companyID uint64, name string) (store.Garden, error) {
	g := store.Garden{Name: name, Company: companyID}
	if err := g.Validate(); err != nil {
		return store.Garden{}, err
	}
	err := s.write(func(ctx context.Context, tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `INSERT INTO gardens (company_id, name) VALUES ($1, $2) RETURNING id`, companyID, name).Scan(&g.ID); err != nil {
			return err
		}
		return recordChange(ctx, tx, s.now(), store.KindGarden, g.ID, companyID, false)
	})
	if isForeignKey(err) {
		return store.Garden{}, fmt.Errorf("company %d: %w", companyID, store.ErrNotFound)
	}
	if err != nil {
		return store.Garden{}, err
	}
	return g, nil
}

func gardenByID(ctx context.Context, q querier, id uint64) (store.Garden, error) {
	g, err := scanGarden(q.QueryRow(ctx, `SELECT `+gardenColumns+` FROM gardens g WHERE g.id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Garden{}, fmt.Errorf("garden %d: %w", id, store.ErrNotFound)
	}
	return g, err
}

// gardenOf checks that a garden addressed under a company belongs to it: one of
// another company is ErrNotFound, as if it did not exist.
func gardenOf(g store.Garden, companyID uint64) error {
	if g.Company != companyID {
		return fmt.Errorf("garden %d of company %d: %w", g.ID, companyID, store.ErrNotFound)
	}
	return nil
}

// Garden returns the garden with id, of whichever company.
func (s *Store) Garden(id uint64) (store.Garden, error) {
	var g store.Garden
	err := s.do(func(ctx context.Context) (err error) {
		g, err = gardenByID(ctx, s.pool, id)
		return err
	})
	return g, err
}

// Gardens returns every garden by id (a site admin's view).
func (s *Store) Gardens() ([]store.Garden, error) { return s.GardensPage(store.Page{}) }

// GardensVisibleTo returns every garden the user can read, each once, by id: all
// gardens of companies where the user holds a company permission, and the gardens
// with a garden permission of the user. Both halves start from the user's permissions
// (indexed by user), so the work follows them, not the number of gardens stored.
func (s *Store) GardensVisibleTo(userID uint64) ([]store.Garden, error) {
	return s.GardensVisibleToPage(userID, store.Page{})
}

// GardensOfCompany returns every garden of the company by id.
func (s *Store) GardensOfCompany(companyID uint64) ([]store.Garden, error) {
	return s.GardensOfCompanyPage(companyID, store.Page{})
}

// CompanyGardensVisibleTo returns the gardens of the company the user can read, by id:
// all of them with a company permission, else those with a garden permission.
func (s *Store) CompanyGardensVisibleTo(companyID, userID uint64) ([]store.Garden, error) {
	return s.CompanyGardensVisibleToPage(companyID, userID, store.Page{})
}

// DeleteGarden removes a garden of the company with its beds, image, coordinates and
// permissions in one transaction (the foreign keys cascade). The caller deletes what
// Removed lists after it returns.
func (s *Store) DeleteGarden(companyID, gardenID uint64) (store.Removed, error) {
	return s.deleteGardens(func(ctx context.Context, tx pgx.Tx) error {
		g, err := scanGarden(tx.QueryRow(ctx, `SELECT `+gardenColumns+` FROM gardens g WHERE g.id = $1 FOR UPDATE`, gardenID))
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("garden %d: %w", gardenID, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		return gardenOf(g, companyID)
	}, `g.id = $1`, `DELETE FROM gardens WHERE id = $1`, gardenID, store.Change{Kind: store.KindGarden, ID: gardenID, Ref: companyID})
}

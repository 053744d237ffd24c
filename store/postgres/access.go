package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/gardend/gardend/store"
)

// Access resolution reads the record and what the user holds on it in one statement:
// one round trip per request, one snapshot.

// accessColumns computes store.Access for user $U on company expression C and garden
// expression G (NULL for none).
func accessColumns(company, garden, user string) string {
	return `(SELECT p.level FROM company_permissions p WHERE p.company_id = ` + company + ` AND p.user_id = ` + user + `),
		(SELECT p.level FROM garden_permissions p WHERE p.garden_id = ` + garden + ` AND p.user_id = ` + user + `),
		EXISTS (SELECT 1 FROM garden_permissions p JOIN gardens pg ON pg.id = p.garden_id
			WHERE p.user_id = ` + user + ` AND pg.company_id = ` + company + `)`
}

func accessOf(company, garden *string, member bool) store.Access {
	a := store.Access{GardenMember: member}
	if company != nil {
		a.Company = store.Level(*company)
	}
	if garden != nil {
		a.Garden = store.Level(*garden)
	}
	return a
}

// CompanyAccess returns the company and what the user holds on it.
func (s *Store) CompanyAccess(companyID, userID uint64) (store.Company, store.Access, error) {
	var (
		c              store.Company
		company, gperm *string
		member         bool
	)
	err := s.do(func(ctx context.Context) error {
		err := s.pool.QueryRow(ctx, `SELECT c.id, c.name, `+accessColumns("c.id", "NULL", "$2")+`
			FROM companies c WHERE c.id = $1`, companyID, userID).Scan(&c.ID, &c.Name, &company, &gperm, &member)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("company %d: %w", companyID, store.ErrNotFound)
		}
		return err
	})
	if err != nil {
		return store.Company{}, store.Access{}, err
	}
	return c, accessOf(company, nil, member), nil
}

// GardenAccess returns a garden of the company and what the user holds on both. A
// garden of another company is ErrNotFound.
func (s *Store) GardenAccess(companyID, gardenID, userID uint64) (store.Garden, store.Access, error) {
	var (
		g              store.Garden
		company, gperm *string
		member         bool
	)
	err := s.do(func(ctx context.Context) error {
		err := s.pool.QueryRow(ctx, `SELECT `+gardenColumns+`, `+accessColumns("g.company_id", "g.id", "$2")+`
			FROM gardens g WHERE g.id = $1`, gardenID, userID).
			Scan(&g.ID, &g.Name, &g.ImagePath, &g.Company, &company, &gperm, &member)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("garden %d: %w", gardenID, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		return gardenOf(g, companyID)
	})
	if err != nil {
		return store.Garden{}, store.Access{}, err
	}
	return g, accessOf(company, gperm, member), nil
}

// BedAccess is GardenAccess that also loads a bed of the garden (ErrNotFound when the
// bed belongs to another garden).
func (s *Store) BedAccess(companyID, gardenID, bedID, userID uint64) (store.Garden, store.Bed, store.Access, error) {
	var (
		g              store.Garden
		b              store.Bed
		bedGarden      *uint64
		company, gperm *string
		member         bool
	)
	err := s.do(func(ctx context.Context) error {
		var bid *uint64
		var uuid, name *string
		err := s.pool.QueryRow(ctx, `SELECT `+gardenColumns+`, b.id, b.garden_id, b.project, b.name, `+accessColumns("g.company_id", "g.id", "$3")+`
			FROM gardens g LEFT JOIN beds b ON b.id = $2 WHERE g.id = $1`, gardenID, bedID, userID).
			Scan(&g.ID, &g.Name, &g.ImagePath, &g.Company, &bid, &bedGarden, &uuid, &name, &company, &gperm, &member)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("garden %d: %w", gardenID, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if err := gardenOf(g, companyID); err != nil {
			return err
		}
		if bid == nil {
			return fmt.Errorf("bed %d: %w", bedID, store.ErrNotFound)
		}
		if *bedGarden != gardenID {
			return fmt.Errorf("bed %d of garden %d: %w", bedID, gardenID, store.ErrNotFound)
		}
		b = store.Bed{ID: *bid, Garden: *bedGarden, UUID: *uuid, Name: *name}
		return nil
	})
	if err != nil {
		return store.Garden{}, store.Bed{}, store.Access{}, err
	}
	return g, b, accessOf(company, gperm, member), nil
}

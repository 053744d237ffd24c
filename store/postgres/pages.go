package postgres

import (
	"context"
	"math"

	"github.com/jackc/pgx/v5"

	"github.com/gardend/gardend/store"
)

// The paged listings (store.ListPager): each page is one query on the id's index;
// the whole-list methods are the page without a limit.

// pageLimit is the LIMIT of p: NULL (none) for 0.
func pageLimit(p store.Page) any {
	if p.Limit <= 0 {
		return nil
	}
	return int64(p.Limit)
}

// pageAfter is the id p starts after; ids are bigint, so one beyond their range is
// their highest.
func pageAfter(p store.Page) int64 {
	return int64(min(p.After, math.MaxInt64))
}

// CompaniesPage is a page of every company (a site admin's view).
func (s *Store) CompaniesPage(p store.Page) ([]store.Company, error) {
	var out []store.Company
	err := s.do(func(ctx context.Context) (err error) {
		out, err = collectCompanies(s.pool.Query(ctx, `SELECT id, name FROM companies WHERE id > $1 ORDER BY id LIMIT $2`,
			pageAfter(p), pageLimit(p)))
		return err
	})
	return out, err
}

// CompaniesOfUserPage is a page of CompaniesOfUser.
func (s *Store) CompaniesOfUserPage(userID uint64, p store.Page) ([]store.Company, error) {
	var out []store.Company
	err := s.do(func(ctx context.Context) (err error) {
		out, err = collectCompanies(s.pool.Query(ctx, `SELECT c.id, c.name FROM company_permissions p
			JOIN companies c ON c.id = p.company_id WHERE p.user_id = $1 AND c.id > $2 ORDER BY c.id LIMIT $3`,
			userID, pageAfter(p), pageLimit(p)))
		return err
	})
	return out, err
}

// GardensPage is a page of every garden (a site admin's view).
func (s *Store) GardensPage(p store.Page) ([]store.Garden, error) {
	var out []store.Garden
	err := s.do(func(ctx context.Context) (err error) {
		out, err = collectGardens(s.pool.Query(ctx, `SELECT `+gardenColumns+` FROM gardens g WHERE g.id > $1 ORDER BY g.id LIMIT $2`,
			pageAfter(p), pageLimit(p)))
		return err
	})
	return out, err
}

// GardensVisibleToPage is a page of GardensVisibleTo.
func (s *Store) GardensVisibleToPage(userID uint64, p store.Page) ([]store.Garden, error) {
	var out []store.Garden
	err := s.do(func(ctx context.Context) (err error) {
		out, err = collectGardens(s.pool.Query(ctx, `
			SELECT `+gardenColumns+` FROM company_permissions p JOIN gardens g ON g.company_id = p.company_id
			WHERE p.user_id = $1 AND g.id > $2
			UNION
			SELECT `+gardenColumns+` FROM garden_permissions p JOIN gardens g ON g.id = p.garden_id
			WHERE p.user_id = $1 AND g.id > $2
			ORDER BY 1 LIMIT $3`, userID, pageAfter(p), pageLimit(p)))
		return err
	})
	return out, err
}

// GardensOfCompanyPage is a page of GardensOfCompany.
func (s *Store) GardensOfCompanyPage(companyID uint64, p store.Page) ([]store.Garden, error) {
	var out []store.Garden
	err := s.read(func(ctx context.Context, tx pgx.Tx) (err error) {
		if _, err := companyByID(ctx, tx, companyID); err != nil {
			return err
		}
		out, err = collectGardens(tx.Query(ctx, `SELECT `+gardenColumns+` FROM gardens g
			WHERE g.company_id = $1 AND g.id > $2 ORDER BY g.id LIMIT $3`, companyID, pageAfter(p), pageLimit(p)))
		return err
	})
	return out, err
}

// CompanyGardensVisibleToPage is a page of CompanyGardensVisibleTo.
func (s *Store) CompanyGardensVisibleToPage(companyID, userID uint64, p store.Page) ([]store.Garden, error) {
	var out []store.Garden
	err := s.read(func(ctx context.Context, tx pgx.Tx) (err error) {
		if _, err := companyByID(ctx, tx, companyID); err != nil {
			return err
		}
		out, err = collectGardens(tx.Query(ctx, `SELECT `+gardenColumns+` FROM gardens g
			WHERE g.company_id = $1 AND g.id > $3 AND (
				EXISTS (SELECT 1 FROM company_permissions p WHERE p.company_id = $1 AND p.user_id = $2)
				OR EXISTS (SELECT 1 FROM garden_permissions p WHERE p.garden_id = g.id AND p.user_id = $2))
			ORDER BY g.id LIMIT $4`, companyID, userID, pageAfter(p), pageLimit(p)))
		return err
	})
	return out, err
}

// CompanyPermissionsPage is a page of CompanyPermissions.
func (s *Store) CompanyPermissionsPage(companyID uint64, p store.Page) ([]store.Permission, error) {
	var out []store.Permission
	err := s.read(func(ctx context.Context, tx pgx.Tx) (err error) {
		if _, err := companyByID(ctx, tx, companyID); err != nil {
			return err
		}
		out, err = collectPermissions(tx.Query(ctx, `SELECT p.id, p.user_id, u.username, p.level
			FROM company_permissions p JOIN users u ON u.id = p.user_id WHERE p.company_id = $1 AND p.id > $2
			ORDER BY p.id LIMIT $3`, companyID, pageAfter(p), pageLimit(p)))
		return err
	})
	return out, err
}

// GardenPermissionsPage is a page of GardenPermissions.
func (s *Store) GardenPermissionsPage(gardenID uint64, p store.Page) ([]store.Permission, error) {
	var out []store.Permission
	err := s.read(func(ctx context.Context, tx pgx.Tx) (err error) {
		if _, err := gardenByID(ctx, tx, gardenID); err != nil {
			return err
		}
		out, err = collectPermissions(tx.Query(ctx, `SELECT p.id, p.user_id, u.username, p.level
			FROM garden_permissions p JOIN users u ON u.id = p.user_id WHERE p.garden_id = $1 AND p.id > $2
			ORDER BY p.id LIMIT $3`, gardenID, pageAfter(p), pageLimit(p)))
		return err
	})
	return out, err
}

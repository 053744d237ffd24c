package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/gardend/gardend/store"
)

// permTarget resolves the user a permission change is about, as login does
// (userIDByName), and returns their id and stored name. Nobody may change their own
// permission (it prevents lock-out); actorID 0 is an operator acting for nobody.
func permTarget(ctx context.Context, tx pgx.Tx, actorID uint64, username string) (uint64, string, error) {
	id, ok, err := userIDByName(ctx, tx, username)
	switch {
	case err != nil:
		return 0, "", err
	case ok && id == actorID:
		return 0, "", store.OwnPermission()
	case !ok:
		return 0, "", store.UnknownPermissionUser(username)
	}
	var name string
	err = tx.QueryRow(ctx, `SELECT username FROM users WHERE id = $1`, id).Scan(&name)
	return id, name, err
}

// lockCompany locks the company's row for the rest of the transaction.
//
// The last-admin rule is a check on a set (the company's admins) followed by a write:
// two concurrent demotions of the two last admins would each see the other still
// admin under snapshot isolation. Every write that can change the set of a company's
// admins (setting or removing a company permission) takes this lock first, so they
// run one after the other and each checks what the previous one committed. A lock,
// not SERIALIZABLE: demotions of one company wait for each other instead of failing
// and retrying, and unrelated writes never conflict. FOR NO KEY UPDATE does not block
// the foreign-key checks of concurrent inserts under the company (new gardens).
func lockCompany(ctx context.Context, tx pgx.Tx, companyID uint64) error {
	var found bool
	err := tx.QueryRow(ctx, `SELECT true FROM companies WHERE id = $1 FOR NO KEY UPDATE`, companyID).Scan(&found)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("company %d: %w", companyID, store.ErrNotFound)
	}
	return err
}

// keepsAnAdmin refuses to take the admin letter from userID when they are the
// company's last admin. Site admins do not count: they are not members. The caller
// holds the company's lock.
func keepsAnAdmin(ctx context.Context, tx pgx.Tx, companyID, userID uint64, username string) error {
	var isAdmin bool
	var others int
	err := tx.QueryRow(ctx, `SELECT
			coalesce(bool_or(user_id = $2), false),
			count(*) FILTER (WHERE user_id <> $2)
		FROM company_permissions WHERE company_id = $1 AND level = 'a'`, companyID, userID).Scan(&isAdmin, &others)
	if err != nil || !isAdmin {
		return err
	}
	if others == 0 {
		return store.LastAdmin(username, companyID)
	}
	return nil
}

// SetCompanyPermission gives the user named username the level on the company,
// overwriting (and keeping the id of) a permission they hold: one upsert on the
// unique (company, user) pair. The rules of the bbolt backend apply: changing one's
// own permission is ErrForbidden, as is demoting the company's last admin (under the
// company's lock, see lockCompany); an unknown username is invalid input.
func (s *Store) SetCompanyPermission(companyID, actorID uint64, username string, level store.Level) (store.CompanyPermission, error) {
	if err := store.ValidatePermissionRequest(username, &level); err != nil {
		return store.CompanyPermission{}, err
	}
	p := store.CompanyPermission{Permission: store.Permission{Username: username, Level: level}, Company: companyID}
	err := s.write(func(ctx context.Context, tx pgx.Tx) error {
		if err := lockCompany(ctx, tx, companyID); err != nil {
			return err
		}
		userID, name, err := permTarget(ctx, tx, actorID, username)
		if err != nil {
			return err
		}
		p.Username = name
		if level != store.LevelAdmin {
			if err := keepsAnAdmin(ctx, tx, companyID, userID, name); err != nil {
				return err
			}
		}
		s.at("company-permission-checked")
		p.UserID = userID
		if err := tx.QueryRow(ctx, `INSERT INTO company_permissions (company_id, user_id, level) VALUES ($1, $2, $3)
			ON CONFLICT (company_id, user_id) DO UPDATE SET level = excluded.level RETURNING id`,
			companyID, userID, string(level)).Scan(&p.ID); err != nil {
			return err
		}
		return recordChange(ctx, tx, s.now(), store.KindCompanyPermission, companyID, userID, false)
	})
	if err != nil {
		return store.CompanyPermission{}, err
	}
	return p, nil
}

// RemoveCompanyPermission deletes the user's permission on the company and reports
// whether there was one. The rules (and the lock) of SetCompanyPermission apply.
func (s *Store) RemoveCompanyPermission(companyID, actorID uint64, username string) (bool, error) {
	if err := store.ValidatePermissionRequest(username, nil); err != nil {
		return false, err
	}
	var removed bool
	err := s.write(func(ctx context.Context, tx pgx.Tx) error {
		removed = false
		if err := lockCompany(ctx, tx, companyID); err != nil {
			return err
		}
		userID, name, err := permTarget(ctx, tx, actorID, username)
		if err != nil {
			return err
		}
		if err := keepsAnAdmin(ctx, tx, companyID, userID, name); err != nil {
			return err
		}
		s.at("company-permission-checked")
		tag, err := tx.Exec(ctx, `DELETE FROM company_permissions WHERE company_id = $1 AND user_id = $2`, companyID, userID)
		if removed = tag.RowsAffected() > 0; err != nil || !removed {
			return err
		}
		return recordChange(ctx, tx, s.now(), store.KindCompanyPermission, companyID, userID, true)
	})
	return removed, err
}

// SetGardenPermission gives the user named username the level on the garden, with the
// rules of SetCompanyPermission except the last-admin one: the company's admins can
// always administer its gardens. Nothing is checked against other rows, so the upsert
// alone is atomic; the foreign keys refuse a garden or user deleted meanwhile.
func (s *Store) SetGardenPermission(gardenID, actorID uint64, username string, level store.Level) (store.GardenPermission, error) {
	if err := store.ValidatePermissionRequest(username, &level); err != nil {
		return store.GardenPermission{}, err
	}
	p := store.GardenPermission{Permission: store.Permission{Username: username, Level: level}, Garden: gardenID}
	err := s.write(func(ctx context.Context, tx pgx.Tx) error {
		if _, err := gardenByID(ctx, tx, gardenID); err != nil {
			return err
		}
		userID, name, err := permTarget(ctx, tx, actorID, username)
		if err != nil {
			return err
		}
		p.UserID, p.Username = userID, name
		err = tx.QueryRow(ctx, `INSERT INTO garden_permissions (garden_id, user_id, level) VALUES ($1, $2, $3)
			ON CONFLICT (garden_id, user_id) DO UPDATE SET level = excluded.level RETURNING id`,
			gardenID, userID, string(level)).Scan(&p.ID)
		if isForeignKey(err) {
			return fmt.Errorf("garden %d: %w", gardenID, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		return recordChange(ctx, tx, s.now(), store.KindGardenPermission, gardenID, userID, false)
	})
	if err != nil {
		return store.GardenPermission{}, err
	}
	return p, nil
}

// RemoveGardenPermission deletes the user's permission on the garden and reports
// whether there was one.
func (s *Store) RemoveGardenPermission(gardenID, actorID uint64, username string) (bool, error) {
	if err := store.ValidatePermissionRequest(username, nil); err != nil {
		return false, err
	}
	var removed bool
	err := s.write(func(ctx context.Context, tx pgx.Tx) error {
		removed = false
		if _, err := gardenByID(ctx, tx, gardenID); err != nil {
			return err
		}
		userID, _, err := permTarget(ctx, tx, actorID, username)
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM garden_permissions WHERE garden_id = $1 AND user_id = $2`, gardenID, userID)
		if removed = tag.RowsAffected() > 0; err != nil || !removed {
			return err
		}
		return recordChange(ctx, tx, s.now(), store.KindGardenPermission, gardenID, userID, true)
	})
	return removed, err
}

func collectPermissions(rows pgx.Rows, err error) ([]store.Permission, error) {
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (p store.Permission, err error) {
		var level string
		err = r.Scan(&p.ID, &p.UserID, &p.Username, &level)
		p.Level = store.Level(level)
		return p, err
	})
	if out == nil && err == nil {
		out = []store.Permission{}
	}
	return out, err
}

// CompanyPermissions lists the company's permissions by id, with current usernames.
func (s *Store) CompanyPermissions(companyID uint64) ([]store.Permission, error) {
	return s.CompanyPermissionsPage(companyID, store.Page{})
}

// GardenPermissions lists the garden's permissions by id, with current usernames.
func (s *Store) GardenPermissions(gardenID uint64) ([]store.Permission, error) {
	return s.GardenPermissionsPage(gardenID, store.Page{})
}

// ListPermissions returns every permission of both kinds, by company or garden and then
// by user id.
func (s *Store) ListPermissions() (store.PermissionList, error) {
	var list store.PermissionList
	err := s.read(func(ctx context.Context, tx pgx.Tx) error {
		list = store.PermissionList{Company: []store.CompanyPermission{}, Garden: []store.GardenPermission{}}
		for _, kind := range []struct{ table, owner string }{{"company_permissions", "company_id"}, {"garden_permissions", "garden_id"}} {
			rows, err := tx.Query(ctx, `SELECT p.`+kind.owner+`, p.id, p.user_id, u.username, p.level
				FROM `+kind.table+` p JOIN users u ON u.id = p.user_id ORDER BY 1, p.user_id`)
			if err != nil {
				return err
			}
			var (
				owner uint64
				p     store.Permission
				level string
			)
			_, err = pgx.ForEachRow(rows, []any{&owner, &p.ID, &p.UserID, &p.Username, &level}, func() error {
				p.Level = store.Level(level)
				if kind.owner == "company_id" {
					list.Company = append(list.Company, store.CompanyPermission{Permission: p, Company: owner})
				} else {
					list.Garden = append(list.Garden, store.GardenPermission{Permission: p, Garden: owner})
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	return list, err
}

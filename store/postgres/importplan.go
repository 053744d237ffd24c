package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/gardend/gardend/store"
)

// PlanImport works out what ApplyImport would do (store.PlanImport), from one
// snapshot, without writing.
func (s *Store) PlanImport(in store.Import) (store.ImportPlan, error) {
	var plan store.ImportPlan
	err := s.read(func(ctx context.Context, tx pgx.Tx) (err error) {
		plan, err = store.PlanImport(importView{ctx, tx}, in)
		return err
	})
	return plan, err
}

// ApplyImport plans again and writes the new records of in, in one SERIALIZABLE
// transaction: the plan reads half the database (usernames, ids in use, the import
// map) before writing, and a node that writes any of it meanwhile must make one of
// the two fail rather than both commit; a serialization failure runs the whole
// transaction again, and a plan that then differs from expect is ErrConflict. Imports
// are rare and short, so their retries cost nothing worth a lock on every table.
func (s *Store) ApplyImport(in store.Import, expect store.ImportPlan, images map[uint64]string) (store.ImportPlan, error) {
	var plan store.ImportPlan
	err := s.inTx(context.Background(), pgx.TxOptions{IsoLevel: pgx.Serializable}, func(ctx context.Context, tx pgx.Tx) error {
		var (
			recs *store.ImportRecords
			err  error
		)
		plan, recs, err = store.PrepareImport(importView{ctx, tx}, in, expect, images, s.now().UTC())
		if err != nil {
			return err
		}
		im := &importer{ctx: ctx, tx: tx}
		if err := recs.Each(im.load); err != nil {
			return err
		}
		if err := im.flush(); err != nil {
			return err
		}
		now := s.now()
		for _, c := range recs.Changes() {
			if err := recordChange(ctx, tx, now, c.Kind, c.ID, c.Ref, false); err != nil {
				return err
			}
		}
		// The image content was stored before its garden existed: attach it, so it
		// goes with the garden.
		for _, g := range recs.Gardens {
			if g.ImagePath != nil {
				if _, err := tx.Exec(ctx, `UPDATE images SET garden_id = $1 WHERE path = $2`, g.ID, *g.ImagePath); err != nil {
					return err
				}
			}
		}
		return advanceSequences(ctx, tx)
	})
	if errors.Is(err, store.ErrNothingToImport) {
		err = nil
	}
	return plan, err
}

// kindTables are the tables of each kind's records.
var kindTables = map[store.ImportKind]string{
	store.ImportUsers: "users", store.ImportCompanies: "companies", store.ImportGardens: "gardens",
	store.ImportBeds: "beds", store.ImportCompanyPerms: "company_permissions", store.ImportGardenPerms: "garden_permissions",
}

// idTables are the tables whose ids come from an identity sequence.
var idTables = []string{"users", "companies", "gardens", "company_permissions", "garden_permissions", "beds", "logs", "photos",
	"alerts"}

// advanceSequences moves every identity sequence past the largest id of its table
// (never back), after rows were written with ids of their own.
func advanceSequences(ctx context.Context, tx pgx.Tx) error {
	for _, t := range idTables {
		// Table names come from the constant list above, never from input.
		// Replicas of other sites' records have ids of 2^40 and above (docs/sync.md):
		// local ids go on below them.
		if _, err := tx.Exec(ctx, `SELECT setval(pg_get_serial_sequence('`+t+`', 'id'),
				greatest(max(id), coalesce(pg_sequence_last_value(pg_get_serial_sequence('`+t+`', 'id')), 0)))
			FROM `+t+` WHERE id < $1 HAVING max(id) IS NOT NULL`, store.LocalIDLimit); err != nil {
			return err
		}
	}
	return nil
}

// importView is store.ImportView on a transaction.
type importView struct {
	ctx context.Context
	tx  pgx.Tx
}

func (v importView) Imported(source string, kind store.ImportKind, key uint64) (uint64, bool, error) {
	var id uint64
	err := v.tx.QueryRow(v.ctx, `SELECT id FROM import_map WHERE source = $1 AND kind = $2 AND key = $3`, source, string(kind), key).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	return id, err == nil, err
}

func (v importView) ImportedIDs(source string, kind store.ImportKind) (map[uint64]bool, error) {
	return v.idSet(`SELECT id FROM import_map WHERE source = $1 AND kind = $2`, source, string(kind))
}

func (v importView) idSet(sql string, args ...any) (map[uint64]bool, error) {
	rows, err := v.tx.Query(v.ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	out := map[uint64]bool{}
	var id uint64
	_, err = pgx.ForEachRow(rows, []any{&id}, func() error {
		out[id] = true
		return nil
	})
	return out, err
}

func (v importView) IDs(kind store.ImportKind) (map[uint64]bool, error) {
	t, ok := kindTables[kind]
	if !ok {
		return nil, nil
	}
	return v.idSet(`SELECT id FROM ` + t)
}

func (v importView) LastID(kind store.ImportKind) (uint64, error) {
	t, ok := kindTables[kind]
	if !ok {
		return 0, nil
	}
	var last uint64
	err := v.tx.QueryRow(v.ctx, `SELECT greatest(coalesce((SELECT max(id) FROM `+t+`), 0),
		coalesce(pg_sequence_last_value(pg_get_serial_sequence('`+t+`', 'id')), 0))`).Scan(&last)
	return last, err
}

func (v importView) Usernames() ([]string, error) {
	rows, err := v.tx.Query(v.ctx, `SELECT username FROM users ORDER BY username`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

func (v importView) HasBed(gardenID uint64, uuid string) (has bool, err error) {
	if !store.CleanText(uuid) {
		return false, nil // no bed has such a project (the import refuses it anyway)
	}
	err = v.tx.QueryRow(v.ctx, `SELECT EXISTS (SELECT 1 FROM beds WHERE garden_id = $1 AND project = $2)`, gardenID, uuid).Scan(&has)
	return has, err
}

func (v importView) HasPermission(kind store.ImportKind, on, userID uint64) (has bool, err error) {
	owner := "company_id"
	if kind == store.ImportGardenPerms {
		owner = "garden_id"
	}
	err = v.tx.QueryRow(v.ctx, `SELECT EXISTS (SELECT 1 FROM `+kindTables[kind]+` WHERE `+owner+` = $1 AND user_id = $2)`, on, userID).Scan(&has)
	return has, err
}

func (v importView) HasWidgets(userID uint64) (has bool, err error) {
	err = v.tx.QueryRow(v.ctx, `SELECT EXISTS (SELECT 1 FROM widgets WHERE user_id = $1)`, userID).Scan(&has)
	return has, err
}

package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/gardend/gardend/store"
)

var _ store.BedValueStore = (*Store)(nil)

// PutBedValues replaces the bed's latest values.
func (s *Store) PutBedValues(v store.BedValues) error {
	if err := v.Validate(); err != nil {
		return err
	}
	return s.write(func(ctx context.Context, tx pgx.Tx) error {
		if _, err := bedOf(ctx, tx, v.Garden, v.Bed); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO bed_values (bed_id, garden_id, at, data) VALUES ($1, $2, $3, $4)
			ON CONFLICT (bed_id) DO UPDATE SET at = excluded.at, data = excluded.data`,
			v.Bed, v.Garden, ts(v.At), []byte(v.Data)); err != nil {
			return err
		}
		return recordChange(ctx, tx, s.now(), store.KindBedValues, v.Bed, v.Garden, false)
	})
}

// BedValuesOfGarden returns the values of the garden's beds, by bed id.
func (s *Store) BedValuesOfGarden(gardenID uint64) ([]store.BedValues, error) {
	var out []store.BedValues
	err := s.read(func(ctx context.Context, tx pgx.Tx) error {
		if _, err := gardenByID(ctx, tx, gardenID); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT bed_id, garden_id, at, data FROM bed_values WHERE garden_id = $1 ORDER BY bed_id`, gardenID)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (v store.BedValues, err error) {
			var data []byte
			err = r.Scan(&v.Bed, &v.Garden, &v.At, &data)
			v.At, v.Data = v.At.UTC(), data
			return v, err
		})
		if out == nil {
			out = []store.BedValues{}
		}
		return err
	})
	return out, err
}

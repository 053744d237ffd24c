package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/gardend/gardend/store"
)

// tables are the tables Stats counts and Check expects.
var tables = []string{
	"cloud_jobs", "companies", "company_permissions", "garden_coordinates", "garden_permissions", "gardens",
	"image_chunks", "images", "plant_positions", "projects", "tokens", "users", "widgets", "beds",
	"meta", "import_map",
	"logs", "photos", "photo_content", "photo_chunks", "plant_ids",
	"history_series", "history_chunks", "alerts", "guidance", "leases",
}

// Stats counts the rows of every table in one snapshot; FileBytes is the size of the
// whole database.
func (s *Store) Stats() (store.Stats, error) {
	var st store.Stats
	err := s.read(func(ctx context.Context, tx pgx.Tx) (err error) {
		st = store.Stats{}
		if st.SchemaVersion, err = s.schemaVersion(ctx, tx); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT pg_database_size(current_database())`).Scan(&st.FileBytes); err != nil {
			return err
		}
		for _, t := range sortedTables() {
			var n int
			// Table names come from the constant list above, never from input.
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{t}.Sanitize()).Scan(&n); err != nil {
				return err
			}
			st.Buckets = append(st.Buckets, store.BucketStats{Name: t, Keys: n})
		}
		return nil
	})
	return st, err
}

func sortedTables() []string { return slices.Sorted(slices.Values(tables)) }

// Check verifies that the database answers and carries the schema this build writes.
func (s *Store) Check() error {
	return s.do(func(ctx context.Context) error {
		v, err := s.schemaVersion(ctx, s.pool)
		if err != nil {
			return err
		}
		if v != SchemaVersion() {
			return fmt.Errorf("database schema version %d, this gardend writes %d", v, SchemaVersion())
		}
		var missing []string
		rows, err := s.pool.Query(ctx, `SELECT t FROM unnest($1::text[]) t WHERE to_regclass(t) IS NULL`, tables)
		if err != nil {
			return err
		}
		missing, err = pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		if len(missing) > 0 {
			return fmt.Errorf("tables missing: %v", missing)
		}
		return nil
	})
}

// invariants are the rules of the records that the schema cannot state: each query
// returns one text row per violation. The foreign keys are checked too (as orphan
// queries), so that a clean result also vouches for them.
var invariants = []struct{ name, query string }{
	// A company made in gardend always has an admin (the last-admin rule keeps one);
	// one imported from another system may have come without (store/importplan.go).
	{"company has no admin", `SELECT 'company ' || c.id || ' has no admin' FROM companies c
		WHERE NOT EXISTS (SELECT 1 FROM company_permissions p WHERE p.company_id = c.id AND p.level = 'a')
		AND NOT EXISTS (SELECT 1 FROM import_map m WHERE m.kind = 'companies' AND m.id = c.id)
		AND c.id < 1099511627776`}, // a replica's admin is its home's business (docs/sync.md)
	{"image path and coordinates disagree", `SELECT 'garden ' || g.id || ': image path and coordinates disagree' FROM gardens g
		WHERE (g.image_path IS NOT NULL) <> EXISTS (SELECT 1 FROM garden_coordinates c WHERE c.garden_id = g.id)`},
	{"coordinates out of order", `SELECT 'garden ' || garden_id || ': coordinate seq not 0..n-1' FROM garden_coordinates
		GROUP BY garden_id HAVING min(seq) <> 0 OR max(seq) <> count(*) - 1`},
	{"project without bed", `SELECT 'project ' || p.uuid || ': no bed refers to it' FROM projects p
		WHERE NOT EXISTS (SELECT 1 FROM beds b WHERE b.project = p.uuid)`},
	// Content never finished is an upload cut off (a node killed): swept later, and
	// harmless as long as no garden shows it.
	{"garden shows unfinished image", `SELECT 'garden ' || g.id || ': image ' || i.path || ' was never finished' FROM gardens g
		JOIN images i ON i.path = g.image_path WHERE i.size IS NULL`},
	{"image size", `SELECT 'image ' || i.path || ': ' || coalesce(sum(octet_length(c.data)), 0) || ' bytes stored, size says ' || i.size
		FROM images i LEFT JOIN image_chunks c ON c.path = i.path WHERE i.size IS NOT NULL
		GROUP BY i.path, i.size HAVING coalesce(sum(octet_length(c.data)), 0) <> i.size`},
	{"orphan garden", `SELECT 'garden ' || g.id || ': company ' || g.company_id || ' does not exist' FROM gardens g
		LEFT JOIN companies c ON c.id = g.company_id WHERE c.id IS NULL`},
	{"orphan company permission", `SELECT 'company permission ' || p.id || ': company or user missing' FROM company_permissions p
		LEFT JOIN companies c ON c.id = p.company_id LEFT JOIN users u ON u.id = p.user_id WHERE c.id IS NULL OR u.id IS NULL`},
	{"orphan garden permission", `SELECT 'garden permission ' || p.id || ': garden or user missing' FROM garden_permissions p
		LEFT JOIN gardens g ON g.id = p.garden_id LEFT JOIN users u ON u.id = p.user_id WHERE g.id IS NULL OR u.id IS NULL`},
	{"orphan bed", `SELECT 'bed ' || b.id || ': garden or project missing' FROM beds b
		LEFT JOIN gardens g ON g.id = b.garden_id LEFT JOIN projects p ON p.uuid = b.project WHERE g.id IS NULL OR p.uuid IS NULL`},
	{"orphan position or job", `SELECT 'cloud of project ' || x.project || ': project missing' FROM
		(SELECT project FROM plant_positions UNION SELECT project FROM cloud_jobs) x
		LEFT JOIN projects p ON p.uuid = x.project WHERE p.uuid IS NULL`},
	{"orphan token", `SELECT 'token of user ' || t.user_id || ': user missing' FROM tokens t
		LEFT JOIN users u ON u.id = t.user_id WHERE u.id IS NULL`},
	// Only local ids count: replicas have ids of 2^40 and above (docs/sync.md).
	{"identity behind", `SELECT t || ': identity sequence behind the largest id' FROM (VALUES
			('users', (SELECT max(id) FROM users WHERE id < 1099511627776), pg_sequence_last_value(pg_get_serial_sequence('users', 'id'))),
			('companies', (SELECT max(id) FROM companies WHERE id < 1099511627776), pg_sequence_last_value(pg_get_serial_sequence('companies', 'id'))),
			('gardens', (SELECT max(id) FROM gardens WHERE id < 1099511627776), pg_sequence_last_value(pg_get_serial_sequence('gardens', 'id'))),
			('beds', (SELECT max(id) FROM beds WHERE id < 1099511627776), pg_sequence_last_value(pg_get_serial_sequence('beds', 'id'))),
			('company_permissions', (SELECT max(id) FROM company_permissions WHERE id < 1099511627776), pg_sequence_last_value(pg_get_serial_sequence('company_permissions', 'id'))),
			('garden_permissions', (SELECT max(id) FROM garden_permissions WHERE id < 1099511627776), pg_sequence_last_value(pg_get_serial_sequence('garden_permissions', 'id'))),
			('logs', (SELECT max(id) FROM logs WHERE id < 1099511627776), pg_sequence_last_value(pg_get_serial_sequence('logs', 'id'))),
			('photos', (SELECT max(id) FROM photos WHERE id < 1099511627776), pg_sequence_last_value(pg_get_serial_sequence('photos', 'id')))
		) AS v(t, max_id, last) WHERE max_id > coalesce(last, 0)`},
	{"photo of another garden than its log", `SELECT 'photo ' || p.id || ': garden ' || p.garden_id || ', its log''s ' || l.garden_id FROM photos p
		JOIN logs l ON l.id = p.log_id WHERE l.garden_id <> p.garden_id`},
	{"log words", `SELECT 'log ' || l.id || ': words not sorted and distinct' FROM logs l
		WHERE l.words <> ARRAY(SELECT DISTINCT w COLLATE "C" FROM unnest(l.words) w ORDER BY 1)`},
	{"photo content size", `SELECT 'photo content ' || c.path || ': ' || coalesce(sum(octet_length(k.data)), 0) || ' bytes stored, size says ' || c.size
		FROM photo_content c LEFT JOIN photo_chunks k ON k.path = c.path WHERE c.size IS NOT NULL
		GROUP BY c.path, c.size HAVING coalesce(sum(octet_length(k.data)), 0) <> c.size`},
	{"alert of another garden than its bed", `SELECT 'alert ' || a.id || ': garden ' || a.garden_id || ', its bed''s ' || b.garden_id FROM alerts a
		JOIN beds b ON b.id = a.bed_id WHERE b.garden_id <> a.garden_id`},
	{"empty history chunk", `SELECT 'history chunk ' || series || '/' || day || ': no points' FROM history_chunks WHERE n < 1`},
}

// CheckIndexes runs every invariant query in one snapshot and returns every
// violation found, joined; tests run it at cleanup.
func (s *Store) CheckIndexes() error {
	var errs []error
	err := s.read(func(ctx context.Context, tx pgx.Tx) error {
		errs = nil
		for _, inv := range invariants {
			rows, err := tx.Query(ctx, inv.query)
			if err != nil {
				return fmt.Errorf("check %s: %w", inv.name, err)
			}
			found, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return fmt.Errorf("check %s: %w", inv.name, err)
			}
			for _, f := range found {
				errs = append(errs, errors.New(f))
			}
		}
		return checkUsernameLooks(ctx, tx, &errs)
	})
	if err != nil {
		return err
	}
	return errors.Join(errs...)
}

// checkUsernameLooks finds accounts whose look columns are not what gardend computes
// of their names (store.UsernameLooks), which SQL cannot check.
func checkUsernameLooks(ctx context.Context, tx pgx.Tx, errs *[]error) error {
	rows, err := tx.Query(ctx, `SELECT id, username, username_look, username_look_lower FROM users`)
	if err != nil {
		return fmt.Errorf("check username looks: %w", err)
	}
	var id uint64
	var name, look, lower string
	_, err = pgx.ForEachRow(rows, []any{&id, &name, &look, &lower}, func() error {
		if want := looksOf(name); want[0] != look || want[1] != lower {
			*errs = append(*errs, fmt.Errorf("user %d %q: looks %q, %q; want %q, %q", id, name, look, lower, want[0], want[1]))
		}
		return nil
	})
	return err
}

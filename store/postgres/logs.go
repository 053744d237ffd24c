package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/gardend/gardend/store"
)

// logColumns read a log as the API answers it: its garden's company, the usernames,
// whether its bed is gone, its photos.
const logColumns = `l.id, g.company_id, l.garden_id, l.type, l.title, l.notes, l.at, l.bed_id, l.plant,
	l.quantity_value, l.quantity_unit, l.assignee_id, asg.username, l.status, l.author_id, au.username,
	l.created, l.updated,
	l.bed_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM beds b WHERE b.id = l.bed_id AND b.garden_id = l.garden_id),
	ARRAY(SELECT p.id FROM photos p WHERE p.log_id = l.id ORDER BY p.id), coalesce(l.client_key, '')`

const logFrom = ` FROM logs l JOIN gardens g ON g.id = l.garden_id JOIN users au ON au.id = l.author_id
	LEFT JOIN users asg ON asg.id = l.assignee_id `

func scanLog(row pgx.Row) (store.Log, error) {
	var (
		l          store.Log
		typ, st    string
		qv         *float64
		qu         *string
		assigneeID *uint64
		photos     []int64
	)
	err := row.Scan(&l.ID, &l.Company, &l.Garden, &typ, &l.Title, &l.Notes, &l.At, &l.Bed, &l.Plant,
		&qv, &qu, &assigneeID, &l.Assignee, &st, &l.AuthorID, &l.Author, &l.Created, &l.Updated, &l.BedRemoved, &photos, &l.ClientKey)
	if err != nil {
		return store.Log{}, err
	}
	l.Type, l.Status = store.LogType(typ), store.LogStatus(st)
	l.At, l.Created, l.Updated = l.At.UTC(), l.Created.UTC(), l.Updated.UTC()
	if qv != nil && qu != nil {
		l.Quantity = &store.Quantity{Value: *qv, Unit: *qu}
	}
	if assigneeID != nil {
		l.AssigneeID = *assigneeID
	}
	l.Photos = make([]uint64, len(photos))
	for i, p := range photos {
		l.Photos[i] = uint64(p)
	}
	return l, nil
}

func logByID(ctx context.Context, q querier, gardenID, logID uint64, lock bool) (store.Log, error) {
	suffix := ""
	if lock {
		suffix = ` FOR UPDATE OF l`
	}
	l, err := scanLog(q.QueryRow(ctx, `SELECT `+logColumns+logFrom+`WHERE l.id = $1 AND l.garden_id = $2`+suffix, logID, gardenID))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Log{}, fmt.Errorf("log %d of garden %d: %w", logID, gardenID, store.ErrNotFound)
	}
	return l, err
}

// checkLogRefs checks the references of next that differ from old's (all for a new
// log) and resolves the assignee's id.
func checkLogRefs(ctx context.Context, tx pgx.Tx, g store.Garden, old, next *store.Log) error {
	changed := func(field string) bool {
		return old == nil || slices.Contains(store.ChangedLogFields(*old, *next), field)
	}
	if next.Bed != nil && (changed("bed") || changed("plant")) {
		var project string
		err := tx.QueryRow(ctx, `SELECT project FROM beds WHERE id = $1 AND garden_id = $2 FOR KEY SHARE`, *next.Bed, g.ID).Scan(&project)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.LogBedNotInGarden(*next.Bed, g.ID)
		}
		if err != nil {
			return err
		}
		if next.Plant != nil {
			var found bool
			err := tx.QueryRow(ctx, `SELECT true FROM plant_ids WHERE project = $1 AND id = $2`, project, *next.Plant).Scan(&found)
			if errors.Is(err, pgx.ErrNoRows) {
				return store.LogPlantNotInBed(*next.Plant, *next.Bed)
			}
			if err != nil {
				return err
			}
		}
	}
	if next.Assignee != nil && changed("assignee") {
		id, ok, err := userIDByName(ctx, tx, *next.Assignee)
		if err != nil {
			return err
		}
		if !ok {
			return store.LogAssigneeWithoutRole(*next.Assignee, g.ID)
		}
		var name string
		// The permission rows are locked against removal until the log commits.
		err = tx.QueryRow(ctx, `SELECT u.username FROM users u WHERE u.id = $1 AND (u.site_admin
				OR EXISTS (SELECT 1 FROM company_permissions p WHERE p.company_id = $2 AND p.user_id = u.id)
				OR EXISTS (SELECT 1 FROM garden_permissions p WHERE p.garden_id = $3 AND p.user_id = u.id))`,
			id, g.Company, g.ID).Scan(&name)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.LogAssigneeWithoutRole(*next.Assignee, g.ID)
		}
		if err != nil {
			return err
		}
		next.AssigneeID, next.Assignee = id, &name
	}
	return nil
}

// logArgs are the stored columns of l, from type on, in logColumnsWrite order.
const logColumnsWrite = `type, title, notes, at, bed_id, plant, quantity_value, quantity_unit, assignee_id, status, words, updated`

func logArgs(l store.Log) []any {
	var qv *float64
	var qu *string
	if l.Quantity != nil {
		qv, qu = &l.Quantity.Value, &l.Quantity.Unit
	}
	var assignee *uint64
	if l.AssigneeID != 0 {
		assignee = &l.AssigneeID
	}
	words := store.LogWords(l.Title, l.Notes)
	if words == nil {
		words = []string{}
	}
	return []any{string(l.Type), l.Title, l.Notes, ts(l.At), l.Bed, l.Plant, qv, qu, assignee, string(l.Status), words, ts(l.Updated)}
}

// CreateLog stores a new log of the garden (store.LogStore). The garden's row is
// locked against deletion (FOR KEY SHARE) while the log is written.
func (s *Store) CreateLog(gardenID, authorID uint64, p store.LogPatch, authorize store.LogAuthorizer) (store.Log, error) {
	l, _, err := s.createLog(gardenID, authorID, "", p, authorize)
	return l, err
}

// CreateLogOnce stores a new log of the garden unless the author made one with that
// key (store.LogStore). The unique index logs_client_key makes a second insert of
// the key wait for the first's transaction and then do nothing.
func (s *Store) CreateLogOnce(gardenID, authorID uint64, key string, p store.LogPatch, authorize store.LogAuthorizer) (store.Log, bool, error) {
	if err := store.ValidClientKey(key); err != nil {
		return store.Log{}, false, err
	}
	return s.createLog(gardenID, authorID, key, p, authorize)
}

// logByKey reads the author's log of the garden made with key; ok is false when
// there is none.
func logByKey(ctx context.Context, tx pgx.Tx, gardenID, authorID uint64, key string) (l store.Log, ok bool, err error) {
	var id uint64
	err = tx.QueryRow(ctx, `SELECT id FROM logs WHERE garden_id = $1 AND author_id = $2 AND client_key = $3`, gardenID, authorID, key).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Log{}, false, nil
	}
	if err != nil {
		return store.Log{}, false, err
	}
	l, err = logByID(ctx, tx, gardenID, id, false)
	return l, err == nil, err
}

func (s *Store) createLog(gardenID, authorID uint64, key string, p store.LogPatch, authorize store.LogAuthorizer) (store.Log, bool, error) {
	now := s.now()
	base := store.ApplyLogPatch(store.Log{Garden: gardenID, AuthorID: authorID, ClientKey: key}, p, true, now)
	if err := store.ValidateLog(base, now); err != nil {
		return store.Log{}, false, err
	}
	var out store.Log
	var created bool
	err := s.write(func(ctx context.Context, tx pgx.Tx) error {
		next := base
		created = false
		g, err := scanGarden(tx.QueryRow(ctx, `SELECT `+gardenColumns+` FROM gardens g WHERE g.id = $1 FOR KEY SHARE`, gardenID))
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("garden %d: %w", gardenID, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if key != "" {
			l, found, err := logByKey(ctx, tx, gardenID, authorID, key)
			if err != nil || found {
				out = l
				return err
			}
			s.at("log-key-checked")
		}
		if err := tx.QueryRow(ctx, `SELECT username FROM users WHERE id = $1`, authorID).Scan(&next.Author); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("user %d: %w", authorID, store.ErrNotFound)
			}
			return err
		}
		next.Company = g.Company
		if authorize != nil {
			if err := authorize(nil, next); err != nil {
				return err
			}
		}
		if err := checkLogRefs(ctx, tx, g, nil, &next); err != nil {
			return err
		}
		next.Created = store.LogTime(now)
		next.Updated = next.Created
		args := append([]any{gardenID, authorID, ts(next.Created), nullString(key)}, logArgs(next)...)
		var id uint64
		err = tx.QueryRow(ctx, `INSERT INTO logs (garden_id, author_id, created, client_key, `+logColumnsWrite+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
			ON CONFLICT (garden_id, author_id, client_key) WHERE client_key IS NOT NULL DO NOTHING RETURNING id`, args...).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) && key != "" {
			// Another call with the key committed while this one was checking.
			l, found, err := logByKey(ctx, tx, gardenID, authorID, key)
			if err == nil && !found {
				err = fmt.Errorf("log of key %q: inserted by another transaction, then gone: %w", key, store.ErrConflict)
			}
			out = l
			return err
		}
		if err != nil {
			return err
		}
		created = true
		if err := recordChange(ctx, tx, now, store.KindLog, id, gardenID, false); err != nil {
			return err
		}
		s.at("log-inserted")
		out, err = logByID(ctx, tx, gardenID, id, false)
		return err
	})
	if err != nil {
		return store.Log{}, false, err
	}
	return out, created, nil
}

// nullString is s, or NULL when empty.
func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Log returns a log of the garden.
func (s *Store) Log(gardenID, logID uint64) (store.Log, error) {
	var out store.Log
	err := s.read(func(ctx context.Context, tx pgx.Tx) (err error) {
		out, err = logByID(ctx, tx, gardenID, logID, false)
		return err
	})
	return out, err
}

// UpdateLog applies p to a log of the garden; its row is locked from reading to
// writing, so concurrent updates apply one after the other.
func (s *Store) UpdateLog(gardenID, logID uint64, p store.LogPatch, authorize store.LogAuthorizer) (store.Log, error) {
	now := s.now()
	var out store.Log
	err := s.write(func(ctx context.Context, tx pgx.Tx) error {
		g, err := scanGarden(tx.QueryRow(ctx, `SELECT `+gardenColumns+` FROM gardens g WHERE g.id = $1 FOR KEY SHARE`, gardenID))
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("garden %d: %w", gardenID, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		old, err := logByID(ctx, tx, gardenID, logID, true)
		if err != nil {
			return err
		}
		next := store.ApplyLogPatch(old, p, false, now)
		if err := store.ValidateLog(next, now); err != nil {
			return err
		}
		if authorize != nil {
			if err := authorize(&old, next); err != nil {
				return err
			}
		}
		if err := checkLogRefs(ctx, tx, g, &old, &next); err != nil {
			return err
		}
		if len(store.ChangedLogFields(old, next)) == 0 {
			out = old
			return nil
		}
		next.Updated = store.LogTime(now)
		args := append([]any{logID}, logArgs(next)...)
		if _, err := tx.Exec(ctx, `UPDATE logs SET (`+logColumnsWrite+`) =
			($2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) WHERE id = $1`, args...); err != nil {
			return err
		}
		if err := recordChange(ctx, tx, now, store.KindLog, logID, gardenID, false); err != nil {
			return err
		}
		out, err = logByID(ctx, tx, gardenID, logID, false)
		return err
	})
	return out, err
}

// DeleteLog deletes a log of the garden with its photos and their content.
func (s *Store) DeleteLog(gardenID, logID uint64, authorize func(store.Log) error) (store.Removed, error) {
	var r store.Removed
	err := s.write(func(ctx context.Context, tx pgx.Tx) error {
		r = store.Removed{}
		l, err := logByID(ctx, tx, gardenID, logID, true)
		if err != nil {
			return err
		}
		if authorize != nil {
			if err := authorize(l); err != nil {
				return err
			}
		}
		if r.PhotoPaths, err = deletePhotosWhere(ctx, tx, `log_id = $1`, logID); err != nil {
			return err
		}
		if _, err = tx.Exec(ctx, `DELETE FROM logs WHERE id = $1`, logID); err != nil {
			return err
		}
		return recordChange(ctx, tx, s.now(), store.KindLog, logID, gardenID, true)
	})
	if err != nil {
		return store.Removed{}, err
	}
	return r, nil
}

// ListLogs returns a page of the garden's logs that f selects: one query, newest
// first, continuing after the cursor (keyset pagination).
func (s *Store) ListLogs(gardenID uint64, f store.LogFilter) (store.LogPage, error) {
	var page store.LogPage
	err := s.read(func(ctx context.Context, tx pgx.Tx) error {
		page = store.LogPage{Logs: []store.Log{}}
		if _, err := gardenByID(ctx, tx, gardenID); err != nil {
			return err
		}
		where := []string{`l.garden_id = $1`}
		args := []any{gardenID}
		add := func(cond string, v ...any) {
			for _, a := range v {
				args = append(args, a)
				cond = strings.Replace(cond, "?", "$"+strconv.Itoa(len(args)), 1)
			}
			where = append(where, cond)
		}
		if f.Type != "" {
			add(`l.type = ?`, string(f.Type))
		}
		if f.Status != "" {
			add(`l.status = ?`, string(f.Status))
		}
		if f.Bed != 0 {
			add(`l.bed_id = ?`, f.Bed)
		}
		if f.Plant != "" {
			add(`l.plant = ?`, f.Plant)
		}
		if f.AssigneeID != 0 {
			add(`l.assignee_id = ?`, f.AssigneeID)
		}
		if f.AuthorID != 0 {
			add(`l.author_id = ?`, f.AuthorID)
		}
		if !f.From.IsZero() {
			add(`l.at >= ?`, ts(f.From))
		}
		if !f.Until.IsZero() {
			add(`l.at < ?`, ts(f.Until))
		}
		if len(f.Words) > 0 {
			add(`l.words @> ?::text[]`, f.Words)
		}
		if f.After != nil {
			add(`(l.at, l.id) < (?, ?)`, ts(f.After.At), f.After.ID)
		}
		limit := f.PageSize()
		args = append(args, limit+1)
		rows, err := tx.Query(ctx, `SELECT `+logColumns+logFrom+`WHERE `+strings.Join(where, ` AND `)+
			` ORDER BY l.at DESC, l.id DESC LIMIT $`+strconv.Itoa(len(args)), args...)
		if err != nil {
			return err
		}
		page.Logs, page.Next, err = collectPage(rows, limit)
		return err
	})
	return page, err
}

// collectPage reads rows (a page's logs and one more) up to limit logs or
// MaxLogPageText of text; the rest is read past, never kept. A row beyond the
// page makes the cursor of the next.
func collectPage(rows pgx.Rows, limit int) ([]store.Log, *store.LogCursor, error) {
	defer rows.Close()
	logs := []store.Log{}
	var next *store.LogCursor
	text := 0
	for rows.Next() {
		if len(logs) == limit || text >= store.MaxLogPageText {
			last := logs[len(logs)-1]
			next = &store.LogCursor{At: last.At, ID: last.ID}
			break
		}
		l, err := scanLog(rows)
		if err != nil {
			return nil, nil, err
		}
		logs = append(logs, l)
		text += l.TextSize()
	}
	rows.Close()
	return logs, next, rows.Err()
}

// PendingTasks returns the pending tasks assigned to the user (store.LogStore).
func (s *Store) PendingTasks(assigneeID uint64, visible map[uint64]bool) ([]store.Log, error) {
	var out []store.Log
	err := s.read(func(ctx context.Context, tx pgx.Tx) error {
		query := `SELECT ` + logColumns + logFrom + `WHERE l.assignee_id = $1 AND l.type = 'task' AND l.status = 'pending'`
		args := []any{assigneeID}
		if visible != nil {
			ids := make([]int64, 0, len(visible))
			for id, ok := range visible {
				if ok {
					ids = append(ids, int64(id))
				}
			}
			query += ` AND l.garden_id = ANY($2)`
			args = append(args, ids)
		}
		rows, err := tx.Query(ctx, query+` ORDER BY l.at, l.id LIMIT `+strconv.Itoa(store.MaxTasks), args...)
		if err != nil {
			return err
		}
		out, _, err = collectPage(rows, store.MaxTasks)
		return err
	})
	if out == nil && err == nil {
		out = []store.Log{}
	}
	return out, err
}

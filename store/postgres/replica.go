package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/gardend/gardend/store"
)

var _ store.ReplicaStore = (*Store)(nil)

// ReplicaCursor is the last sequence applied from site.
func (s *Store) ReplicaCursor(site uint32) (uint64, error) {
	var seq uint64
	err := s.do(func(ctx context.Context) error {
		err := s.pool.QueryRow(ctx, `SELECT seq FROM replica_cursors WHERE site = $1`, site).Scan(&seq)
		if errors.Is(err, pgx.ErrNoRows) {
			seq = 0
			return nil
		}
		return err
	})
	return seq, err
}

// ApplyReplica runs fn in one write transaction with the site's cursor, which it
// locks first: office nodes applying one site's changes at once run one after the
// other, and the second sees what the first applied.
func (s *Store) ApplyReplica(site uint32, siteName string, fn func(w store.ReplicaWriter, cursor uint64) (uint64, error)) (store.Removed, error) {
	var r store.Removed
	err := s.write(func(ctx context.Context, tx pgx.Tx) error {
		r = store.Removed{}
		if _, err := tx.Exec(ctx, `INSERT INTO replica_cursors (site, seq) VALUES ($1, 0) ON CONFLICT (site) DO NOTHING`, site); err != nil {
			return err
		}
		var cur uint64
		if err := tx.QueryRow(ctx, `SELECT seq FROM replica_cursors WHERE site = $1 FOR UPDATE`, site).Scan(&cur); err != nil {
			return err
		}
		w := &replicaWriter{ctx: ctx, tx: tx, site: siteName, removed: &r}
		next, err := fn(w, cur)
		if err != nil {
			return err
		}
		if r.BedUUIDs, err = settleProjects(ctx, tx, w.projects); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE replica_cursors SET seq = $2 WHERE site = $1`, site, next)
		return err
	})
	if err != nil {
		return store.Removed{}, err
	}
	return r, nil
}

// replicaWriter writes replicas in one transaction; projects collects the projects of
// deleted beds, settled before the cursor is written.
type replicaWriter struct {
	ctx      context.Context
	tx       pgx.Tx
	site     string
	removed  *store.Removed
	projects []string
}

func (w *replicaWriter) PutUser(u store.ReplicaUser) error {
	ctx, tx := w.ctx, w.tx
	cur, err := scanUser(tx.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE id = $1 FOR UPDATE`, u.ID))
	isNew := errors.Is(err, pgx.ErrNoRows)
	if err != nil && !isNew {
		return err
	}
	name := cur.Username
	if isNew || !isReplicaName(cur.Username, u.Username, w.site, u.ID) {
		if name, err = w.replicaName(u); err != nil {
			return err
		}
	}
	looks := looksOf(name)
	joined := ts(u.DateJoined)
	if isNew {
		_, err = tx.Exec(ctx, `INSERT INTO users (id, username, first_name, last_name, email, password_hash, date_joined,
				site_admin, username_look, username_look_lower) VALUES ($1, $2, $3, $4, $5, $6, $7, false, $8, $9)`,
			u.ID, name, u.FirstName, u.LastName, u.Email, u.PasswordHash, joined, looks[0], looks[1])
	} else {
		newHash := cur.PasswordHash != u.PasswordHash
		_, err = tx.Exec(ctx, `UPDATE users SET username = $2, first_name = $3, last_name = $4, email = $5,
				password_hash = $6, date_joined = $7, site_admin = false, username_look = $8, username_look_lower = $9,
				credentials_gen = credentials_gen + CASE WHEN $10 THEN 1 ELSE 0 END WHERE id = $1`,
			u.ID, name, u.FirstName, u.LastName, u.Email, u.PasswordHash, joined, looks[0], looks[1], newHash)
		if err == nil && newHash {
			_, err = revokeUserTokens(ctx, tx, u.ID, nil)
		}
	}
	if err != nil {
		return err
	}
	if u.Widgets == nil {
		_, err = tx.Exec(ctx, `DELETE FROM widgets WHERE user_id = $1`, u.ID)
	} else {
		_, err = tx.Exec(ctx, `INSERT INTO widgets (user_id, doc) VALUES ($1, $2)
			ON CONFLICT (user_id) DO UPDATE SET doc = excluded.doc`, u.ID, u.Widgets)
	}
	return err
}

// isReplicaName reports whether stored is one of the names a replica of home takes
// (store.ReplicaUsername): an unchanged name keeps its spelling.
func isReplicaName(stored, home, site string, id uint64) bool {
	home = store.NormalizeUsername(home)
	for try := range store.ReplicaUsernameTries {
		if stored == store.ReplicaUsername(home, site, id, try) {
			return true
		}
	}
	return false
}

func (w *replicaWriter) replicaName(u store.ReplicaUser) (string, error) {
	home := store.NormalizeUsername(u.Username)
	for try := range store.ReplicaUsernameTries {
		name := store.ReplicaUsername(home, w.site, u.ID, try)
		err := claimUsername(w.ctx, w.tx, name, u.ID)
		if err == nil {
			return name, nil
		}
		if !errors.Is(err, store.ErrConflict) {
			return "", err
		}
	}
	return "", fmt.Errorf("%w: user %d of site %s: every name it could take here is taken", store.ErrConflict, u.ID, w.site)
}

func (w *replicaWriter) PutCompany(c store.Company) error {
	if err := c.Validate(); err != nil {
		return err
	}
	_, err := w.tx.Exec(w.ctx, `INSERT INTO companies (id, name) VALUES ($1, $2)
		ON CONFLICT (id) DO UPDATE SET name = excluded.name`, c.ID, c.Name)
	return err
}

func (w *replicaWriter) DeleteCompany(id uint64) error {
	return w.deleteGardens(`g.company_id = $1`, `DELETE FROM companies WHERE id = $1`, id)
}

// deleteGardens deletes a record (del, with $1) with the gardens matching where,
// collecting what they leave.
func (w *replicaWriter) deleteGardens(where, del string, id uint64) error {
	paths, projects, err := removedWith(w.ctx, w.tx, where, id)
	if err != nil {
		return err
	}
	if _, err := w.tx.Exec(w.ctx, del, id); err != nil {
		return err
	}
	w.removed.ImagePaths = append(w.removed.ImagePaths, paths...)
	w.projects = append(w.projects, projects...)
	return nil
}

func (w *replicaWriter) PutGarden(g store.Garden) error {
	if err := g.Validate(); err != nil {
		return err
	}
	var company uint64
	err := w.tx.QueryRow(w.ctx, `INSERT INTO gardens (id, company_id, name) VALUES ($1, $2, $3)
		ON CONFLICT (id) DO UPDATE SET name = excluded.name RETURNING company_id`, g.ID, g.Company, g.Name).Scan(&company)
	switch {
	case isForeignKey(err):
		return fmt.Errorf("company %d: %w", g.Company, store.ErrNotFound)
	case err != nil:
		return err
	case company != g.Company:
		return fmt.Errorf("%w: garden %d belongs to company %d, not %d", store.ErrInvalid, g.ID, company, g.Company)
	}
	return nil
}

func (w *replicaWriter) DeleteGarden(id uint64) error {
	return w.deleteGardens(`g.id = $1`, `DELETE FROM gardens WHERE id = $1`, id)
}

func (w *replicaWriter) SetGardenImage(gardenID uint64, path string, cs store.Coordinates) error {
	if err := store.ValidateImageRecord(path, cs); err != nil {
		return err
	}
	ctx, tx := w.ctx, w.tx
	var prev *string
	err := tx.QueryRow(ctx, `SELECT image_path FROM gardens WHERE id = $1 FOR UPDATE`, gardenID).Scan(&prev)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("garden %d: %w", gardenID, store.ErrNotFound)
	}
	if err != nil {
		return err
	}
	if prev != nil && *prev != path {
		w.removed.ImagePaths = append(w.removed.ImagePaths, *prev)
	}
	return setImageRecord(ctx, tx, gardenID, path, cs)
}

func (w *replicaWriter) PutBed(b store.Bed) error {
	if err := b.Validate(); err != nil {
		return err
	}
	ctx, tx := w.ctx, w.tx
	old, err := scanBed(tx.QueryRow(ctx, `SELECT `+bedColumns+` FROM beds b WHERE b.id = $1 FOR UPDATE`, b.ID))
	switch {
	case err == nil && (old.Garden != b.Garden || old.UUID != b.UUID):
		// A bed never moves nor changes project at its home; replace it whole.
		if err := w.DeleteBed(b.ID); err != nil {
			return err
		}
	case err == nil:
		_, err = tx.Exec(ctx, `UPDATE beds SET name = $2 WHERE id = $1`, b.ID, b.Name)
		return err
	case !errors.Is(err, pgx.ErrNoRows):
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO projects (uuid) VALUES ($1) ON CONFLICT (uuid) DO UPDATE SET uuid = excluded.uuid`, b.UUID); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO beds (id, garden_id, project, name) VALUES ($1, $2, $3, $4)`, b.ID, b.Garden, b.UUID, b.Name)
	switch {
	case isForeignKey(err):
		return fmt.Errorf("garden %d: %w", b.Garden, store.ErrNotFound)
	case isUnique(err):
		return store.BedUUIDTaken(b.Garden, b.UUID)
	}
	return err
}

func (w *replicaWriter) DeleteBed(id uint64) error {
	var project string
	err := w.tx.QueryRow(w.ctx, `DELETE FROM beds WHERE id = $1 RETURNING project`, id).Scan(&project)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	w.projects = append(w.projects, project)
	return nil
}

func (w *replicaWriter) PutCompanyPermission(p store.CompanyPermission) error {
	if err := p.Level.Validate(); err != nil {
		return err
	}
	_, err := w.tx.Exec(w.ctx, `INSERT INTO company_permissions (id, company_id, user_id, level) VALUES ($1, $2, $3, $4)
		ON CONFLICT (company_id, user_id) DO UPDATE SET id = excluded.id, level = excluded.level`,
		p.ID, p.Company, p.UserID, string(p.Level))
	if isForeignKey(err) {
		return fmt.Errorf("company %d or user %d: %w", p.Company, p.UserID, store.ErrNotFound)
	}
	return err
}

func (w *replicaWriter) DeleteCompanyPermission(companyID, userID uint64) error {
	_, err := w.tx.Exec(w.ctx, `DELETE FROM company_permissions WHERE company_id = $1 AND user_id = $2`, companyID, userID)
	return err
}

func (w *replicaWriter) PutGardenPermission(p store.GardenPermission) error {
	if err := p.Level.Validate(); err != nil {
		return err
	}
	_, err := w.tx.Exec(w.ctx, `INSERT INTO garden_permissions (id, garden_id, user_id, level) VALUES ($1, $2, $3, $4)
		ON CONFLICT (garden_id, user_id) DO UPDATE SET id = excluded.id, level = excluded.level`,
		p.ID, p.Garden, p.UserID, string(p.Level))
	if isForeignKey(err) {
		return fmt.Errorf("garden %d or user %d: %w", p.Garden, p.UserID, store.ErrNotFound)
	}
	return err
}

func (w *replicaWriter) DeleteGardenPermission(gardenID, userID uint64) error {
	_, err := w.tx.Exec(w.ctx, `DELETE FROM garden_permissions WHERE garden_id = $1 AND user_id = $2`, gardenID, userID)
	return err
}

func (w *replicaWriter) PutBedValues(v store.BedValues) error {
	if err := v.Validate(); err != nil {
		return err
	}
	// One round trip: the bed is checked by the insert itself. Bed values are most
	// of a box's changes (the robot's readings), one statement each.
	tag, err := w.tx.Exec(w.ctx, `INSERT INTO bed_values (bed_id, garden_id, at, data)
		SELECT id, garden_id, $3, $4 FROM beds WHERE id = $1 AND garden_id = $2
		ON CONFLICT (bed_id) DO UPDATE SET at = excluded.at, data = excluded.data`,
		v.Bed, v.Garden, ts(v.At), []byte(v.Data))
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("bed %d of garden %d: %w", v.Bed, v.Garden, store.ErrNotFound)
	}
	return nil
}

// logColumnsReplica are the columns PutLog writes, in its arguments' order.
const logColumnsReplica = `id, garden_id, author_id, created, client_key, ` + logColumnsWrite

func (w *replicaWriter) PutLog(l store.ArchivedLog) error {
	l.At, l.Created, l.Updated = store.LogTime(l.At), store.LogTime(l.Created), store.LogTime(l.Updated)
	v := l.Log()
	if err := store.ValidateLog(v, l.Updated); err != nil {
		return err
	}
	args := append([]any{l.ID, l.Garden, l.AuthorID, ts(l.Created), nullString(l.ClientKey)}, logArgs(v)...)
	cols := strings.Split(logColumnsReplica, ", ")
	params, excluded := make([]string, len(cols)), make([]string, len(cols))
	for i, c := range cols {
		params[i], excluded[i] = "$"+strconv.Itoa(i+1), "excluded."+c
	}
	_, err := w.tx.Exec(w.ctx, `INSERT INTO logs (`+logColumnsReplica+`) VALUES (`+strings.Join(params, ", ")+`)
		ON CONFLICT (id) DO UPDATE SET (`+strings.Join(cols[1:], ", ")+`) = (`+strings.Join(excluded[1:], ", ")+`)`, args...)
	if isForeignKey(err) {
		return fmt.Errorf("log %d: its garden or a user it names: %w", l.ID, store.ErrNotFound)
	}
	return err
}

func (w *replicaWriter) DeleteLog(id uint64) error {
	paths, err := deletePhotosWhere(w.ctx, w.tx, `log_id = $1`, id)
	if err != nil {
		return err
	}
	w.removed.PhotoPaths = append(w.removed.PhotoPaths, paths...)
	_, err = w.tx.Exec(w.ctx, `DELETE FROM logs WHERE id = $1`, id)
	return err
}

func (w *replicaWriter) PutPhoto(p store.Photo) error {
	p.Created = store.LogTime(p.Created)
	p.ClientKey = ""
	if err := p.Validate(); err != nil {
		return err
	}
	ctx, tx := w.ctx, w.tx
	// The log's row lock orders this with its deletion, as AddPhoto's does.
	l, err := logByID(ctx, tx, p.Garden, p.Log, true)
	if err != nil {
		return err
	}
	var oldLog uint64
	var oldPath string
	var oldThumb *string
	err = tx.QueryRow(ctx, `SELECT log_id, path, thumb_path FROM photos WHERE id = $1 FOR UPDATE`, p.ID).Scan(&oldLog, &oldPath, &oldThumb)
	switch {
	case err == nil:
		if oldLog != p.Log {
			return fmt.Errorf("%w: photo %d belongs to log %d, not %d", store.ErrInvalid, p.ID, oldLog, p.Log)
		}
		for _, path := range []*string{&oldPath, oldThumb} {
			if path != nil && *path != p.Path && *path != p.ThumbPath {
				w.removed.PhotoPaths = append(w.removed.PhotoPaths, *path)
			}
		}
	case !errors.Is(err, pgx.ErrNoRows):
		return err
	case len(l.Photos) >= store.MaxLogPhotos:
		return store.LogPhotosFull(p.Log)
	}
	var thumb *string
	if p.ThumbPath != "" {
		thumb = &p.ThumbPath
	}
	_, err = tx.Exec(ctx, `INSERT INTO photos (id, log_id, garden_id, content_type, width, height, size, path, thumb_path, thumb_size, uploader, created)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
		ON CONFLICT (id) DO UPDATE SET (content_type, width, height, size, path, thumb_path, thumb_size, uploader, created) =
			(excluded.content_type, excluded.width, excluded.height, excluded.size, excluded.path, excluded.thumb_path,
			 excluded.thumb_size, excluded.uploader, excluded.created)`,
		p.ID, p.Log, p.Garden, p.ContentType, p.Width, p.Height, p.Size, p.Path, thumb, p.ThumbSize, p.Uploader, ts(p.Created))
	if isForeignKey(err) {
		return fmt.Errorf("photo %d: its uploader %d: %w", p.ID, p.Uploader, store.ErrNotFound)
	}
	return err
}

func (w *replicaWriter) DeletePhoto(id uint64) error {
	paths, err := deletePhotosWhere(w.ctx, w.tx, `id = $1`, id)
	w.removed.PhotoPaths = append(w.removed.PhotoPaths, paths...)
	return err
}

package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gardend/gardend/store"
)

var _ store.Archiver = (*Store)(nil)

// Export writes every record to w as an archive, from one REPEATABLE READ snapshot.
// It holds that snapshot (and a connection) until w has taken everything, so ctx,
// not the operation deadline, bounds it.
func (s *Store) Export(ctx context.Context, w io.Writer) error {
	var aw *store.ArchiveWriter
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := unbounded(ctx, tx, 0); err != nil {
			return err
		}
		var id []byte
		if err := tx.QueryRow(ctx, `SELECT value FROM meta WHERE name = 'data_id'`).Scan(&id); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		var err error
		if aw, err = store.NewArchiveWriter(w, store.ArchiveHeader{Exported: s.now(), DataID: string(id)}); err != nil {
			return err
		}
		each := func(kind, query string, scan func(pgx.Rows) (any, error)) error {
			rows, err := tx.Query(ctx, query)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				rec, err := scan(rows)
				if err != nil {
					return err
				}
				if err := aw.Write(kind, rec); err != nil {
					return err
				}
			}
			return rows.Err()
		}
		steps := []func() error{
			func() error {
				return each(store.KindUser, `SELECT `+userColumns+` FROM users ORDER BY id`, func(r pgx.Rows) (any, error) {
					u, err := scanUser(r)
					hash, gen := u.PasswordHash, u.CredentialsGen
					u.PasswordHash, u.CredentialsGen = "", 0
					return store.ArchivedUser{User: u, PasswordHash: hash, CredentialsGen: gen}, err
				})
			},
			func() error {
				return each(store.KindToken, `SELECT digest, user_id, created, expiry FROM tokens ORDER BY digest`, func(r pgx.Rows) (any, error) {
					var t store.ArchivedToken
					err := r.Scan(&t.Digest, &t.UserID, &t.Created, &t.Expiry)
					t.Created, t.Expiry = t.Created.UTC(), t.Expiry.UTC()
					return t, err
				})
			},
			func() error {
				return each(store.KindWidgets, `SELECT user_id, doc FROM widgets ORDER BY user_id`, func(r pgx.Rows) (any, error) {
					var w store.ArchivedWidgets
					return w, r.Scan(&w.UserID, &w.Doc)
				})
			},
			func() error {
				return each(store.KindCompany, `SELECT id, name FROM companies ORDER BY id`, func(r pgx.Rows) (any, error) {
					var c store.Company
					return c, r.Scan(&c.ID, &c.Name)
				})
			},
			func() error {
				return each(store.KindGarden, `SELECT `+gardenColumns+`,
						array_agg(c.name ORDER BY c.seq) FILTER (WHERE c.seq IS NOT NULL),
						array_agg(c.latitude ORDER BY c.seq) FILTER (WHERE c.seq IS NOT NULL),
						array_agg(c.longitude ORDER BY c.seq) FILTER (WHERE c.seq IS NOT NULL)
					FROM gardens g LEFT JOIN garden_coordinates c ON c.garden_id = g.id
					GROUP BY g.id ORDER BY g.id`, func(r pgx.Rows) (any, error) {
					var (
						g          store.ArchivedGarden
						names      []string
						lats, lons []float64
					)
					err := r.Scan(&g.ID, &g.Name, &g.ImagePath, &g.Company, &names, &lats, &lons)
					for i := range names {
						g.Coordinates = append(g.Coordinates, store.Coordinate{Name: names[i], Latitude: lats[i], Longitude: lons[i]})
					}
					return g, err
				})
			},
			func() error {
				return each(store.KindCompanyPermission, `SELECT id, company_id, user_id, level FROM company_permissions ORDER BY id`, scanArchivedPermission)
			},
			func() error {
				return each(store.KindGardenPermission, `SELECT id, garden_id, user_id, level FROM garden_permissions ORDER BY id`, scanArchivedPermission)
			},
			func() error {
				return each(store.KindBed, `SELECT `+bedColumns+` FROM beds b ORDER BY b.id`, func(r pgx.Rows) (any, error) {
					b, err := scanBed(r)
					return store.ArchivedBed{Bed: b, Garden: b.Garden}, err
				})
			},
			func() error {
				return each(store.KindPosition, `SELECT `+positionColumns+` FROM plant_positions ORDER BY project, cloud`, func(r pgx.Rows) (any, error) {
					return scanPosition(r)
				})
			},
			func() error {
				return each(store.KindCloudJob, `SELECT `+jobColumns+` FROM cloud_jobs ORDER BY project, cloud`, func(r pgx.Rows) (any, error) {
					j, err := scanJob(r)
					// Claims belong to the nodes of this install, not to the records.
					j.ClaimedBy, j.ClaimUntil = "", time.Time{}
					return j, err
				})
			},
			func() error {
				return each(store.KindImportMap, `SELECT source, kind, key, id FROM import_map ORDER BY source, kind, key`, func(r pgx.Rows) (any, error) {
					var (
						e    store.ImportMapEntry
						kind string
					)
					err := r.Scan(&e.Source, &kind, &e.Key, &e.ID)
					e.Kind = store.ImportKind(kind)
					return e, err
				})
			},
			func() error {
				return each(store.KindPlantID, `SELECT project, name, id FROM plant_ids ORDER BY project, name`, func(r pgx.Rows) (any, error) {
					var p store.PlantID
					return p, r.Scan(&p.Project, &p.Name, &p.ID)
				})
			},
			func() error {
				return each(store.KindLog, `SELECT id, garden_id, type, title, notes, at, bed_id, plant, quantity_value, quantity_unit,
						coalesce(assignee_id, 0), status, author_id, created, updated, coalesce(client_key, '') FROM logs ORDER BY id`, func(r pgx.Rows) (any, error) {
					var (
						a       store.ArchivedLog
						typ, st string
						qv      *float64
						qu      *string
					)
					err := r.Scan(&a.ID, &a.Garden, &typ, &a.Title, &a.Notes, &a.At, &a.Bed, &a.Plant, &qv, &qu,
						&a.AssigneeID, &st, &a.AuthorID, &a.Created, &a.Updated, &a.ClientKey)
					a.Type, a.Status = store.LogType(typ), store.LogStatus(st)
					a.At, a.Created, a.Updated = a.At.UTC(), a.Created.UTC(), a.Updated.UTC()
					if qv != nil && qu != nil {
						a.Quantity = &store.Quantity{Value: *qv, Unit: *qu}
					}
					return a, err
				})
			},
			func() error {
				return each(store.KindPhoto, `SELECT `+photoColumns+` FROM photos ORDER BY id`, func(r pgx.Rows) (any, error) {
					return scanPhoto(r)
				})
			},
		}
		steps = append(steps, exportHistorySteps(each)...)
		for _, step := range steps {
			if err := step(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return s.classify(err)
	}
	return aw.Close()
}

func scanArchivedPermission(r pgx.Rows) (any, error) {
	var (
		p     store.ArchivedPermission
		level string
	)
	err := r.Scan(&p.ID, &p.On, &p.UserID, &level)
	p.Level = store.Level(level)
	return p, err
}

// importBatch is how many inserts go to the server in one round trip.
const importBatch = 256

// Import loads an archive into this database, which must hold no user and no company
// (unless opts.Replace), in one transaction: on any error nothing is written. The
// users and companies tables are locked (EXCLUSIVE: others may read, nobody writes)
// for the duration, so no node writes into a database being loaded; with Replace every
// table is emptied first (TRUNCATE: nodes wait for the import, and answer 503 if it
// takes longer than their operation timeout). The foreign keys and unique constraints
// check the references; the invariant queries of CheckIndexes run before the commit.
// With opts.Images the content of every garden's image is stored in the same
// transaction, chunk by chunk.
func (s *Store) Import(ctx context.Context, r io.Reader, opts store.ImportOptions) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return s.classify(err)
	}
	err = func() error {
		if err := unbounded(ctx, tx, lockingIdle); err != nil {
			return err
		}
		if opts.Replace {
			if _, err := tx.Exec(ctx, `TRUNCATE `+strings.Join(recordTables, ", ")+` RESTART IDENTITY`); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `LOCK TABLE users, companies IN EXCLUSIVE MODE`); err != nil {
			return err
		}
		var used bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM users) OR EXISTS (SELECT 1 FROM companies)`).Scan(&used); err != nil {
			return err
		}
		if used {
			return fmt.Errorf("%w: the database holds users or companies already; import into an empty one", store.ErrConflict)
		}
		im := &importer{ctx: ctx, tx: tx}
		head, err := store.ReadArchive(ctx, r, im.load, opts.Repaired)
		if err != nil {
			return err
		}
		if err := im.flush(); err != nil {
			return err
		}
		if head.DataID != "" {
			if _, err := tx.Exec(ctx, `INSERT INTO meta (name, value) VALUES ('data_id', $1)
				ON CONFLICT (name) DO UPDATE SET value = excluded.value`, []byte(head.DataID)); err != nil {
				return err
			}
		}
		if opts.Images != nil {
			for _, g := range im.images {
				if err := s.importImage(ctx, tx, g.path, g.garden, opts.Images); err != nil {
					return err
				}
			}
			for _, p := range im.photos {
				if err := s.importPhotoContent(ctx, tx, p.path, p.garden, opts.Images); err != nil {
					return err
				}
			}
		}
		// New records get ids past the imported ones.
		if err := advanceSequences(ctx, tx); err != nil {
			return err
		}
		var broken []string
		for _, inv := range invariants {
			rows, err := tx.Query(ctx, inv.query)
			if err != nil {
				return err
			}
			found, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return err
			}
			broken = append(broken, found...)
		}
		if len(broken) > 0 {
			return fmt.Errorf("%w: the archive breaks the rules of the records: %s", store.ErrInvalid, strings.Join(broken, "; "))
		}
		return nil
	}()
	if err != nil {
		_ = tx.Rollback(ctx) // err says more; a failed rollback closes the connection
		return s.classify(err)
	}
	// A lost answer to this COMMIT is resolved, not guessed: run again after a
	// commit that happened, the import would find the database full.
	if err := s.commit(ctx, tx, false); err != nil {
		return s.classify(err)
	}
	// The planner's statistics of a bulk load are missing until autovacuum comes
	// round; without them it scans a logbook from end to end for a rare word
	// instead of asking the words' index (BenchmarkListLogs: 250 ms against 1).
	return s.classify(s.doCtx(ctx, func(ctx context.Context) error {
		_, err := s.pool.Exec(ctx, `ANALYZE logs, photos, plant_ids`)
		return err
	}))
}

// recordTables are the tables of records: an import with Replace empties them all.
var recordTables = []string{"users", "tokens", "widgets", "companies", "gardens", "garden_coordinates",
	"company_permissions", "garden_permissions", "projects", "beds", "plant_positions", "cloud_jobs",
	"images", "image_chunks", "import_map", "plant_ids", "logs", "photos", "photo_content", "photo_chunks",
	"history_series", "history_chunks", "alerts", "guidance", "bed_values"}

// importer queues the inserts of an import and sends them in batches.
type importer struct {
	ctx   context.Context
	tx    pgx.Tx
	batch pgx.Batch
	what  []string // what each queued insert is, for errors
	// images are the images the imported gardens show; photos the content the
	// imported photos refer to.
	images []gardenImage
	photos []gardenImage
}

type gardenImage struct {
	garden uint64
	path   string
}

// importImage stores the content of one image in the import's transaction, chunk by
// chunk; content open says is missing is left out.
func (s *Store) importImage(ctx context.Context, tx pgx.Tx, path string, gardenID uint64, open func(string) (io.ReadCloser, error)) error {
	rc, err := open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("image %s: %w", path, err)
	}
	defer func() { _ = rc.Close() }() // read only
	if _, err := tx.Exec(ctx, `INSERT INTO images (path, garden_id, created) VALUES ($1, $2, $3)`, path, gardenID, ts(s.now())); err != nil {
		if isUnique(err) {
			return fmt.Errorf("%w: image %s is shown by two gardens", store.ErrInvalid, path)
		}
		return err
	}
	size, err := writeChunks(rc, func(seq int32, chunk []byte) error {
		_, err := tx.Exec(ctx, `INSERT INTO image_chunks (path, seq, data) VALUES ($1, $2, $3)`, path, seq, chunk)
		return err
	})
	if err != nil {
		return fmt.Errorf("image %s: %w", path, err)
	}
	_, err = tx.Exec(ctx, `UPDATE images SET size = $2 WHERE path = $1`, path, size)
	return err
}

// importPhotoContent stores the content of one photo in the import's transaction, as
// importImage does for images; content open says is missing is left out.
func (s *Store) importPhotoContent(ctx context.Context, tx pgx.Tx, path string, gardenID uint64, open func(string) (io.ReadCloser, error)) error {
	rc, err := open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("photo %s: %w", path, err)
	}
	defer func() { _ = rc.Close() }() // a reader: nothing to lose
	if _, err := tx.Exec(ctx, `INSERT INTO photo_content (path, garden_id, created) VALUES ($1, $2, $3)`, path, gardenID, ts(s.now())); err != nil {
		if isUnique(err) {
			return fmt.Errorf("%w: photo content %s is named twice", store.ErrInvalid, path)
		}
		return err
	}
	size, err := writeChunks(rc, func(seq int32, chunk []byte) error {
		_, err := tx.Exec(ctx, `INSERT INTO photo_chunks (path, seq, data) VALUES ($1, $2, $3)`, path, seq, chunk)
		return err
	})
	if err != nil {
		return fmt.Errorf("photo %s: %w", path, err)
	}
	_, err = tx.Exec(ctx, `UPDATE photo_content SET size = $2 WHERE path = $1`, path, size)
	return err
}

func (im *importer) queue(what, sql string, args ...any) error {
	im.batch.Queue(sql, args...)
	im.what = append(im.what, what)
	if im.batch.Len() >= importBatch {
		return im.flush()
	}
	return nil
}

func (im *importer) flush() error {
	if im.batch.Len() == 0 {
		return nil
	}
	res := im.tx.SendBatch(im.ctx, &im.batch)
	var err error
	for _, what := range im.what {
		if _, err = res.Exec(); err != nil {
			switch code := sqlState(err); {
			case code == "23503":
				err = fmt.Errorf("%w: %s refers to a record the archive does not hold before it", store.ErrInvalid, what)
			case code == "23505":
				err = fmt.Errorf("%w: %s appears twice", store.ErrInvalid, what)
			case strings.HasPrefix(code, "23"), strings.HasPrefix(code, "22"):
				err = fmt.Errorf("%w: %s: %v", store.ErrInvalid, what, err)
			}
			break
		}
	}
	if cerr := res.Close(); err == nil {
		err = cerr
	}
	im.batch = pgx.Batch{}
	im.what = im.what[:0]
	return err
}

func (im *importer) load(kind string, rec any) error {
	switch r := rec.(type) {
	case *store.ArchivedUser:
		return im.queue(fmt.Sprintf("user %d", r.ID), `INSERT INTO users (id, username, first_name, last_name, email,
				password_hash, date_joined, last_login, site_admin, credentials_gen, username_look, username_look_lower)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
			append([]any{r.ID, r.Username, r.FirstName, r.LastName, r.Email, r.PasswordHash, ts(r.DateJoined), optTime(r.LastLogin), r.SiteAdmin,
				r.CredentialsGen}, looksOf(r.Username)...)...)
	case *store.ArchivedToken:
		return im.queue(fmt.Sprintf("token %x of user %d", r.Digest[:6], r.UserID),
			`INSERT INTO tokens (digest, user_id, created, expiry) VALUES ($1, $2, $3, $4)`, r.Digest, r.UserID, ts(r.Created), ts(r.Expiry))
	case *store.ArchivedWidgets:
		return im.queue(fmt.Sprintf("widgets of user %d", r.UserID), `INSERT INTO widgets (user_id, doc) VALUES ($1, $2)`, r.UserID, r.Doc)
	case *store.Company:
		return im.queue(fmt.Sprintf("company %d", r.ID), `INSERT INTO companies (id, name) VALUES ($1, $2)`, r.ID, r.Name)
	case *store.ArchivedGarden:
		what := fmt.Sprintf("garden %d", r.ID)
		if r.ImagePath != nil {
			im.images = append(im.images, gardenImage{garden: r.ID, path: *r.ImagePath})
		}
		if err := im.queue(what, `INSERT INTO gardens (id, company_id, name, image_path) VALUES ($1, $2, $3, $4)`,
			r.ID, r.Company, r.Name, r.ImagePath); err != nil {
			return err
		}
		for i, c := range r.Coordinates {
			if err := im.queue(what+" coordinates", `INSERT INTO garden_coordinates (garden_id, seq, name, latitude, longitude)
				VALUES ($1, $2, $3, $4, $5)`, r.ID, i, c.Name, c.Latitude, c.Longitude); err != nil {
				return err
			}
		}
		return nil
	case *store.ArchivedPermission:
		table, owner := "company_permissions", "company_id"
		if kind == store.KindGardenPermission {
			table, owner = "garden_permissions", "garden_id"
		}
		return im.queue(fmt.Sprintf("%s %d", kind, r.ID), `INSERT INTO `+table+` (id, `+owner+`, user_id, level) VALUES ($1, $2, $3, $4)`,
			r.ID, r.On, r.UserID, string(r.Level))
	case *store.ArchivedBed:
		what := fmt.Sprintf("bed %d", r.ID)
		if err := im.queue(what, `INSERT INTO projects (uuid) VALUES ($1) ON CONFLICT DO NOTHING`, r.UUID); err != nil {
			return err
		}
		return im.queue(what, `INSERT INTO beds (id, garden_id, project, name) VALUES ($1, $2, $3, $4)`, r.ID, r.Garden, r.UUID, r.Name)
	case *store.PlantPosition:
		var lat, lon *float64
		if r.Position != nil {
			lat, lon = &r.Position.Lat, &r.Position.Lon
		}
		args := append([]any{r.Project, r.Cloud}, inputsOf(r.CloudInputs).args()...)
		args = append(args, lat, lon, r.Reason, r.Points, ts(r.Computed))
		return im.queue(fmt.Sprintf("position of %s/%s", r.Project, r.Cloud), `INSERT INTO plant_positions (`+positionColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`, args...)
	case *store.CloudJob:
		args := append([]any{r.Project, r.Cloud}, inputsOf(r.CloudInputs).args()...)
		args = append(args, r.Attempts, ts(r.NextAttempt), nullTime(r.LastAttempt), r.LastError, r.Failed, ts(r.Enqueued), "", nil)
		return im.queue(fmt.Sprintf("queued download of %s/%s", r.Project, r.Cloud), `INSERT INTO cloud_jobs (`+jobColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`, args...)
	case *store.PlantID:
		return im.queue(fmt.Sprintf("plant id %s of project %s", r.ID, r.Project),
			`INSERT INTO plant_ids (project, name, id) VALUES ($1, $2, $3)`, r.Project, r.Name, r.ID)
	case *store.ArchivedLog:
		l := r.Log()
		l.AssigneeID = r.AssigneeID
		args := append([]any{r.ID, r.Garden, r.AuthorID, ts(r.Created), nullString(r.ClientKey)}, logArgs(l)...)
		return im.queue(fmt.Sprintf("log %d", r.ID), `INSERT INTO logs (id, garden_id, author_id, created, client_key, `+logColumnsWrite+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`, args...)
	case *store.Photo:
		var thumb *string
		if r.ThumbPath != "" {
			thumb = &r.ThumbPath
			im.photos = append(im.photos, gardenImage{garden: r.Garden, path: r.ThumbPath})
		}
		im.photos = append(im.photos, gardenImage{garden: r.Garden, path: r.Path})
		return im.queue(fmt.Sprintf("photo %d", r.ID), `INSERT INTO photos (id, log_id, garden_id, content_type, width, height, size, path, thumb_path, thumb_size, uploader, created, client_key)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
			r.ID, r.Log, r.Garden, r.ContentType, r.Width, r.Height, r.Size, r.Path, thumb, r.ThumbSize, r.Uploader, ts(r.Created), nullString(r.ClientKey))
	case *store.ImportMapEntry:
		return im.queue(fmt.Sprintf("import map entry %s/%s/%d", r.Source, r.Kind, r.Key),
			`INSERT INTO import_map (source, kind, key, id) VALUES ($1, $2, $3, $4)`, r.Source, string(r.Kind), r.Key, r.ID)
	}
	if handled, err := im.loadHistory(rec); handled {
		return err
	}
	return errors.New("archive: unexpected " + kind + " record")
}

func optTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := ts(*t)
	return &v
}

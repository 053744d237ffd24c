package postgres

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gardend/gardend/store"
)

var _ store.SharedPhotos = (*Store)(nil)

const photoColumns = `id, log_id, garden_id, content_type, width, height, size, path, coalesce(thumb_path, ''), thumb_size, uploader, created, coalesce(client_key, '')`

func scanPhoto(row pgx.Row) (store.Photo, error) {
	var p store.Photo
	err := row.Scan(&p.ID, &p.Log, &p.Garden, &p.ContentType, &p.Width, &p.Height, &p.Size, &p.Path, &p.ThumbPath, &p.ThumbSize, &p.Uploader, &p.Created, &p.ClientKey)
	p.Created = p.Created.UTC()
	return p, err
}

// photoBudgetLock is the advisory lock that orders budget checks across nodes.
const photoBudgetLock int64 = 0x70686f746f73 // "photos"

// AddPhoto records a photo of a log of the garden (store.LogStore). The log's row is
// locked against deletion while the photo is added.
func (s *Store) AddPhoto(gardenID, logID uint64, p store.Photo, budget int64, authorize func(store.Log) error) (store.Photo, error) {
	p.ClientKey = ""
	ph, _, err := s.addPhoto(gardenID, logID, p, budget, authorize)
	return ph, err
}

// AddPhotoOnce records a photo of a log unless the log has one of that key
// (store.LogStore). The log's row lock orders the calls of one log: the second
// finds the first's photo.
func (s *Store) AddPhotoOnce(gardenID, logID uint64, key string, p store.Photo, budget int64, authorize func(store.Log) error) (store.Photo, bool, error) {
	if err := store.ValidClientKey(key); err != nil {
		return store.Photo{}, false, err
	}
	p.ClientKey = key
	return s.addPhoto(gardenID, logID, p, budget, authorize)
}

func (s *Store) addPhoto(gardenID, logID uint64, p store.Photo, budget int64, authorize func(store.Log) error) (store.Photo, bool, error) {
	p.Created = store.LogTime(s.now())
	p.Log, p.Garden = logID, gardenID
	if err := p.Validate(); err != nil {
		return store.Photo{}, false, err
	}
	var earlier *store.Photo
	err := s.write(func(ctx context.Context, tx pgx.Tx) error {
		earlier = nil
		l, err := logByID(ctx, tx, gardenID, logID, true)
		if err != nil {
			return err
		}
		if p.ClientKey != "" {
			q, err := scanPhoto(tx.QueryRow(ctx, `SELECT `+photoColumns+` FROM photos WHERE log_id = $1 AND client_key = $2`, logID, p.ClientKey))
			if err == nil {
				if q.Uploader != p.Uploader {
					return store.PhotoKeyOfAnother()
				}
				earlier = &q
				return nil
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
		}
		if authorize != nil {
			if err := authorize(l); err != nil {
				return err
			}
		}
		// The log's row lock orders the photos added to it: the count holds.
		if len(l.Photos) >= store.MaxLogPhotos {
			return store.LogPhotosFull(logID)
		}
		if budget > 0 {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, photoBudgetLock); err != nil {
				return err
			}
			var used int64
			if err := tx.QueryRow(ctx, `SELECT coalesce(sum(size + thumb_size), 0) FROM photos`).Scan(&used); err != nil {
				return err
			}
			if used+p.Bytes() > budget {
				return store.PhotoStorageFull(used, p.Bytes(), budget)
			}
		}
		var thumb *string
		if p.ThumbPath != "" {
			thumb = &p.ThumbPath
		}
		if err := tx.QueryRow(ctx, `INSERT INTO photos (log_id, garden_id, content_type, width, height, size, path, thumb_path, thumb_size, uploader, created, client_key)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id`,
			logID, gardenID, p.ContentType, p.Width, p.Height, p.Size, p.Path, thumb, p.ThumbSize, p.Uploader, ts(p.Created), nullString(p.ClientKey)).Scan(&p.ID); err != nil {
			return err
		}
		return recordChange(ctx, tx, s.now(), store.KindPhoto, p.ID, logID, false)
	})
	switch {
	case err != nil:
		return store.Photo{}, false, err
	case earlier != nil:
		return *earlier, false, nil
	}
	return p, true, nil
}

// Photo returns a photo of a log of the garden.
func (s *Store) Photo(gardenID, logID, photoID uint64) (store.Photo, error) {
	var p store.Photo
	err := s.do(func(ctx context.Context) (err error) {
		p, err = scanPhoto(s.pool.QueryRow(ctx, `SELECT `+photoColumns+` FROM photos WHERE id = $1 AND log_id = $2 AND garden_id = $3`, photoID, logID, gardenID))
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Photo{}, fmt.Errorf("photo %d of log %d: %w", photoID, logID, store.ErrNotFound)
	}
	return p, err
}

// PhotoByID returns a photo of any log.
func (s *Store) PhotoByID(photoID uint64) (store.Photo, error) {
	var p store.Photo
	err := s.do(func(ctx context.Context) (err error) {
		p, err = scanPhoto(s.pool.QueryRow(ctx, `SELECT `+photoColumns+` FROM photos WHERE id = $1`, photoID))
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Photo{}, fmt.Errorf("photo %d: %w", photoID, store.ErrNotFound)
	}
	return p, err
}

// SetPhotoThumb records a thumbnail for a photo that has none.
func (s *Store) SetPhotoThumb(photoID uint64, path string, size int64) (store.Photo, error) {
	var p store.Photo
	err := s.write(func(ctx context.Context, tx pgx.Tx) (err error) {
		tag, err := tx.Exec(ctx, `UPDATE photos SET thumb_path = $2, thumb_size = $3 WHERE id = $1 AND thumb_path IS NULL`, photoID, path, size)
		if err != nil {
			return err
		}
		p, err = scanPhoto(tx.QueryRow(ctx, `SELECT `+photoColumns+` FROM photos WHERE id = $1`, photoID))
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("photo %d: %w", photoID, store.ErrNotFound)
		}
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		return recordChange(ctx, tx, s.now(), store.KindPhoto, p.ID, p.Log, false)
	})
	return p, err
}

// DeletePhoto deletes a photo of a log of the garden with its content.
func (s *Store) DeletePhoto(gardenID, logID, photoID uint64, authorize func(store.Log) error) (store.Removed, error) {
	var r store.Removed
	err := s.write(func(ctx context.Context, tx pgx.Tx) error {
		r = store.Removed{}
		l, err := logByID(ctx, tx, gardenID, logID, true)
		if err != nil {
			return err
		}
		var found bool
		err = tx.QueryRow(ctx, `SELECT true FROM photos WHERE id = $1 AND log_id = $2`, photoID, logID).Scan(&found)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("photo %d of log %d: %w", photoID, logID, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if authorize != nil {
			if err := authorize(l); err != nil {
				return err
			}
		}
		if r.PhotoPaths, err = deletePhotosWhere(ctx, tx, `id = $1`, photoID); err != nil {
			return err
		}
		return recordChange(ctx, tx, s.now(), store.KindPhoto, photoID, logID, true)
	})
	if err != nil {
		return store.Removed{}, err
	}
	return r, nil
}

// deletePhotosWhere deletes the photos matching where (with $1) and their content,
// and returns the content paths, by photo id.
func deletePhotosWhere(ctx context.Context, tx pgx.Tx, where string, arg uint64) ([]string, error) {
	rows, err := tx.Query(ctx, `DELETE FROM photos WHERE `+where+` RETURNING id, path, thumb_path`, arg)
	if err != nil {
		return nil, err
	}
	type gone struct {
		id          uint64
		path, thumb string
	}
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (g gone, err error) {
		var thumb *string
		err = r.Scan(&g.id, &g.path, &thumb)
		if thumb != nil {
			g.thumb = *thumb
		}
		return g, err
	})
	if err != nil {
		return nil, err
	}
	var paths []string
	slices.SortFunc(all, func(a, b gone) int { return cmp.Compare(a.id, b.id) })
	for _, g := range all {
		paths = append(paths, g.path)
		if g.thumb != "" {
			paths = append(paths, g.thumb)
		}
	}
	if len(paths) > 0 {
		if _, err := tx.Exec(ctx, `DELETE FROM photo_content WHERE path = ANY($1)`, paths); err != nil {
			return nil, err
		}
	}
	return paths, nil
}

// PhotoPaths returns every content path photos refer to.
func (s *Store) PhotoPaths() (map[string]bool, error) {
	paths := map[string]bool{}
	err := s.do(func(ctx context.Context) error {
		clear(paths)
		rows, err := s.pool.Query(ctx, `SELECT path FROM photos UNION SELECT thumb_path FROM photos WHERE thumb_path IS NOT NULL`)
		if err != nil {
			return err
		}
		var p string
		_, err = pgx.ForEachRow(rows, []any{&p}, func() error {
			paths[p] = true
			return nil
		})
		return err
	})
	return paths, err
}

// PhotoBytes is what the photos keep in all.
func (s *Store) PhotoBytes() (int64, error) {
	var n int64
	err := s.do(func(ctx context.Context) error {
		return s.pool.QueryRow(ctx, `SELECT coalesce(sum(size + thumb_size), 0) FROM photos`).Scan(&n)
	})
	return n, err
}

// KeepPlantIDs returns the kept id of every plant of seen, keeping new names' ids
// (store.LogStore): one read when every name is known, else an insert that leaves
// names another node kept meanwhile as that node kept them.
func (s *Store) KeepPlantIDs(project string, seen []store.PlantID) (map[string]string, error) {
	for i := range seen {
		seen[i].Project = project
	}
	var ids map[string]string
	err := s.write(func(ctx context.Context, tx pgx.Tx) error {
		kept, err := keptPlantIDs(ctx, tx, project)
		if err != nil {
			return err
		}
		var add []store.PlantID
		ids, add = store.PlanPlantIDs(kept, seen)
		if len(add) == 0 {
			return nil
		}
		// The project's row is locked (KEY SHARE) against its deletion and orders two
		// nodes adding the same names: the second sees the first's rows.
		var found bool
		err = tx.QueryRow(ctx, `SELECT true FROM projects WHERE uuid = $1 FOR UPDATE`, project).Scan(&found)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // no bed refers to it: nothing is kept
		}
		if err != nil {
			return err
		}
		if kept, err = keptPlantIDs(ctx, tx, project); err != nil {
			return err
		}
		ids, add = store.PlanPlantIDs(kept, seen)
		names, pids := make([]string, len(add)), make([]string, len(add))
		for i, p := range add {
			names[i], pids[i] = p.Name, p.ID
		}
		_, err = tx.Exec(ctx, `INSERT INTO plant_ids (project, name, id) SELECT $1, * FROM unnest($2::text[], $3::text[])`, project, names, pids)
		return err
	})
	return ids, err
}

func keptPlantIDs(ctx context.Context, q querier, project string) (map[string]string, error) {
	rows, err := q.Query(ctx, `SELECT name, id FROM plant_ids WHERE project = $1`, project)
	if err != nil {
		return nil, err
	}
	kept := map[string]string{}
	var name, id string
	_, err = pgx.ForEachRow(rows, []any{&name, &id}, func() error {
		kept[name] = id
		return nil
	})
	return kept, err
}

// Photo content: as image content (images.go), chunks of ImageChunkSize in
// photo_chunks under a row of photo_content that counts once its size is written.

// PutPhoto stores everything r yields as photo content of the garden.
func (s *Store) PutPhoto(ctx context.Context, gardenID uint64, ext string, r io.Reader) (string, int64, error) {
	if ext != ".jpg" && ext != ".png" {
		return "", 0, fmt.Errorf("photo content: extension %q", ext)
	}
	var name [16]byte
	rand.Read(name[:])
	path := store.PhotoDir + "/" + hex.EncodeToString(name[:]) + ext
	err := s.doCtx(ctx, func(ctx context.Context) error {
		_, err := s.pool.Exec(ctx, `INSERT INTO photo_content (path, garden_id, created) VALUES ($1, $2, $3)`, path, gardenID, ts(s.now()))
		if isForeignKey(err) {
			return fmt.Errorf("garden %d: %w", gardenID, store.ErrNotFound)
		}
		return err
	})
	if err != nil {
		return "", 0, err
	}
	size, err := writeChunks(r, func(seq int32, chunk []byte) error {
		return s.doCtx(ctx, func(ctx context.Context) error {
			_, err := s.pool.Exec(ctx, `INSERT INTO photo_chunks (path, seq, data) VALUES ($1, $2, $3)`, path, seq, chunk)
			return err
		})
	})
	if err == nil {
		err = s.doCtx(ctx, func(ctx context.Context) error {
			tag, err := s.pool.Exec(ctx, `UPDATE photo_content SET size = $2 WHERE path = $1`, path, size)
			if err == nil && tag.RowsAffected() == 0 {
				return fmt.Errorf("%w: the garden of photo %s was deleted", store.ErrNotFound, path)
			}
			return err
		})
	}
	if err != nil {
		// Best effort: what is left is swept later.
		_ = s.doCtx(context.WithoutCancel(ctx), func(ctx context.Context) error {
			_, err := s.pool.Exec(ctx, `DELETE FROM photo_content WHERE path = $1`, path)
			return err
		})
		return "", 0, err
	}
	return path, size, nil
}

// OpenPhoto streams the content at path a piece of a chunk at a time (chunks.go).
func (s *Store) OpenPhoto(ctx context.Context, path string) (io.ReadCloser, int64, error) {
	var size *int64
	err := s.doCtx(ctx, func(ctx context.Context) error {
		return s.pool.QueryRow(ctx, `SELECT size FROM photo_content WHERE path = $1`, path).Scan(&size)
	})
	if errors.Is(err, pgx.ErrNoRows) || err == nil && size == nil {
		return nil, 0, fmt.Errorf("photo %s: %w", path, store.ErrNotFound)
	}
	if err != nil {
		return nil, 0, err
	}
	return &chunkReader{s: s, ctx: ctx, path: path, left: *size, what: path,
		query: `SELECT substring(data FROM $3 FOR $4), octet_length(data) FROM photo_chunks WHERE path = $1 AND seq = $2`}, *size, nil
}

// RemovePhoto deletes the content at path unless a photo refers to it.
func (s *Store) RemovePhoto(ctx context.Context, path string) error {
	return s.doCtx(ctx, func(ctx context.Context) error {
		_, err := s.pool.Exec(ctx, `DELETE FROM photo_content c WHERE c.path = $1
			AND NOT EXISTS (SELECT 1 FROM photos p WHERE p.path = c.path OR p.thumb_path = c.path)`, path)
		return err
	})
}

// SweepUnreferencedPhotos deletes content no photo refers to that was put more than
// grace ago.
func (s *Store) SweepUnreferencedPhotos(ctx context.Context, grace time.Duration) (int, error) {
	var n int
	err := s.doCtx(ctx, func(ctx context.Context) error {
		tag, err := s.pool.Exec(ctx, `DELETE FROM photo_content c WHERE c.created < $1
			AND NOT EXISTS (SELECT 1 FROM photos p WHERE p.path = c.path)
			AND NOT EXISTS (SELECT 1 FROM photos p WHERE p.thumb_path = c.path)`, ts(s.now().Add(-grace)))
		n = int(tag.RowsAffected())
		return err
	})
	return n, err
}

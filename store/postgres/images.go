package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gardend/gardend/store"
)

// SetGardenImage points the garden at a new image and replaces its whole coordinate
// set, in one transaction, and returns the previous image path ("" when there was
// none). The garden's row is locked (FOR UPDATE) between reading the old path and
// writing the new one, so two uploads each get the path the other replaced.
func (s *Store) SetGardenImage(gardenID uint64, path string, cs store.Coordinates) (string, error) {
	if err := store.ValidateImageRecord(path, cs); err != nil {
		return "", err
	}
	var old string
	err := s.write(func(ctx context.Context, tx pgx.Tx) error {
		var prev *string
		var companyID uint64
		err := tx.QueryRow(ctx, `SELECT image_path, company_id FROM gardens WHERE id = $1 FOR UPDATE`, gardenID).Scan(&prev, &companyID)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("garden %d: %w", gardenID, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		old = ""
		if prev != nil {
			old = *prev
		}
		if err := setImageRecord(ctx, tx, gardenID, path, cs); err != nil {
			return err
		}
		return recordChange(ctx, tx, s.now(), store.KindGardenImage, gardenID, companyID, false)
	})
	if err != nil {
		return "", err
	}
	return old, nil
}

// setImageRecord points the garden (locked by the caller) at path with coordinates cs.
func setImageRecord(ctx context.Context, tx pgx.Tx, gardenID uint64, path string, cs store.Coordinates) error {
	if _, err := tx.Exec(ctx, `UPDATE gardens SET image_path = $2 WHERE id = $1`, gardenID, path); err != nil {
		return err
	}
	// Content stored before it had a garden (PutImage with garden 0) goes with
	// this one from now on.
	if _, err := tx.Exec(ctx, `UPDATE images SET garden_id = $1 WHERE path = $2 AND garden_id IS NULL`, gardenID, path); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM garden_coordinates WHERE garden_id = $1`, gardenID); err != nil {
		return err
	}
	seq := make([]int32, len(cs))
	names := make([]string, len(cs))
	lats := make([]float64, len(cs))
	lons := make([]float64, len(cs))
	for i, c := range cs {
		seq[i], names[i], lats[i], lons[i] = int32(i), c.Name, c.Latitude, c.Longitude
	}
	_, err := tx.Exec(ctx, `INSERT INTO garden_coordinates (garden_id, seq, name, latitude, longitude)
		SELECT $1, * FROM unnest($2::integer[], $3::text[], $4::double precision[], $5::double precision[])`,
		gardenID, seq, names, lats, lons)
	return err
}

// GardenImage returns the garden's image path and coordinates from one snapshot, so
// they always belong to the same upload. A garden without image is ErrNotFound.
func (s *Store) GardenImage(gardenID uint64) (string, store.Coordinates, error) {
	var (
		path string
		cs   store.Coordinates
	)
	err := s.read(func(ctx context.Context, tx pgx.Tx) error {
		g, err := gardenByID(ctx, tx, gardenID)
		if err != nil {
			return err
		}
		if g.ImagePath == nil {
			return store.NoImage(gardenID)
		}
		path = *g.ImagePath
		rows, err := tx.Query(ctx, `SELECT name, latitude, longitude FROM garden_coordinates WHERE garden_id = $1 ORDER BY seq`, gardenID)
		if err != nil {
			return err
		}
		cs, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (c store.Coordinate, err error) {
			err = r.Scan(&c.Name, &c.Latitude, &c.Longitude)
			return c, err
		})
		if err == nil && len(cs) == 0 {
			// A damaged record, not a missing image: %v keeps it from reading as
			// ErrNotFound.
			return fmt.Errorf("coordinates of garden %d: %v", gardenID, "none stored")
		}
		return err
	})
	return path, cs, err
}

// ImagePaths returns the set of image paths gardens refer to.
func (s *Store) ImagePaths() (map[string]bool, error) {
	paths := map[string]bool{}
	err := s.do(func(ctx context.Context) error {
		clear(paths)
		rows, err := s.pool.Query(ctx, `SELECT image_path FROM gardens WHERE image_path IS NOT NULL`)
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

// Image content lives in the database so that nodes hold none: images names each
// upload and image_chunks holds its bytes in chunks of ImageChunkSize, so that it
// streams in and out and no step holds a whole image.

// ImageChunkSize is the size of one stored chunk of image content.
const ImageChunkSize = 256 << 10

// PutImage stores everything r yields as a new image of the garden and returns its
// path ("images/<random>.png", the shape of the file backend's paths) and size.
// Each chunk is written in a statement of its own, so no transaction stays open while
// r is read; the image counts only once its size is written last, and a failed or
// interrupted upload is deleted (or, if this node dies, swept by
// SweepUnreferencedImages).
func (s *Store) PutImage(ctx context.Context, gardenID uint64, r io.Reader) (string, int64, error) {
	var name [16]byte
	rand.Read(name[:])
	path := "images/" + hex.EncodeToString(name[:]) + ".png"
	var garden *uint64 // NULL: a garden to come (an import)
	if gardenID != 0 {
		garden = &gardenID
	}
	// The path is this call's own: a conflict is a try whose answer was lost.
	err := s.doCtx(ctx, func(ctx context.Context) error {
		_, err := s.pool.Exec(ctx, `INSERT INTO images (path, garden_id, created) VALUES ($1, $2, $3)
			ON CONFLICT (path) DO NOTHING`, path, garden, ts(s.now()))
		if isForeignKey(err) {
			return fmt.Errorf("garden %d: %w", gardenID, store.ErrNotFound)
		}
		return err
	})
	if err != nil {
		return "", 0, err
	}
	size, err := s.putChunks(ctx, path, r)
	if err != nil {
		// Best effort: what is left is swept later.
		_ = s.doCtx(context.WithoutCancel(ctx), func(ctx context.Context) error {
			_, err := s.pool.Exec(ctx, `DELETE FROM images WHERE path = $1`, path)
			return err
		})
		return "", 0, err
	}
	return path, size, nil
}

func (s *Store) putChunks(ctx context.Context, path string, r io.Reader) (int64, error) {
	size, err := writeChunks(r, func(seq int32, chunk []byte) error {
		return s.doCtx(ctx, func(ctx context.Context) error {
			_, err := s.pool.Exec(ctx, `INSERT INTO image_chunks (path, seq, data) VALUES ($1, $2, $3)
				ON CONFLICT (path, seq) DO UPDATE SET data = excluded.data`, path, seq, chunk)
			return err
		})
	})
	if err != nil {
		return 0, err
	}
	err = s.doCtx(ctx, func(ctx context.Context) error {
		tag, err := s.pool.Exec(ctx, `UPDATE images SET size = $2 WHERE path = $1`, path, size)
		if err == nil && tag.RowsAffected() == 0 {
			// The garden was deleted while its image arrived.
			return fmt.Errorf("%w: the garden of image %s was deleted", store.ErrNotFound, path)
		}
		return err
	})
	return size, err
}

// OpenImage streams the content at path a piece of a chunk at a time (chunks.go): each
// piece is one short query, so a slow reader holds no connection, no transaction and
// no more than a piece. Content removed while it
// is read (a newer upload replaced it) ends the stream with an error wrapping
// ErrNotFound rather than with wrong bytes.
func (s *Store) OpenImage(ctx context.Context, path string) (io.ReadCloser, int64, error) {
	var size *int64
	err := s.doCtx(ctx, func(ctx context.Context) error {
		return s.pool.QueryRow(ctx, `SELECT size FROM images WHERE path = $1`, path).Scan(&size)
	})
	if errors.Is(err, pgx.ErrNoRows) || err == nil && size == nil {
		return nil, 0, fmt.Errorf("image %s: %w", path, store.ErrNotFound)
	}
	if err != nil {
		return nil, 0, err
	}
	return &chunkReader{s: s, ctx: ctx, path: path, left: *size, what: "image " + path,
		query: `SELECT substring(data FROM $3 FOR $4), octet_length(data) FROM image_chunks WHERE path = $1 AND seq = $2`}, *size, nil
}

// RemoveImage deletes the content at path unless a garden shows it; content gone
// already is not an error.
func (s *Store) RemoveImage(ctx context.Context, path string) error {
	return s.doCtx(ctx, func(ctx context.Context) error {
		_, err := s.pool.Exec(ctx, `DELETE FROM images i WHERE i.path = $1
			AND NOT EXISTS (SELECT 1 FROM gardens g WHERE g.image_path = i.path)`, path)
		return err
	})
}

// SweepUnreferencedImages deletes content that no garden shows and that was put more
// than grace ago (uploads that died while storing their content or before pointing
// their garden at it); younger content may belong to an upload still in flight on some
// node. It returns how many images it deleted.
func (s *Store) SweepUnreferencedImages(ctx context.Context, grace time.Duration) (int, error) {
	var n int
	err := s.writeCtx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM images i WHERE i.created < $1
			AND NOT EXISTS (SELECT 1 FROM gardens g WHERE g.image_path = i.path)`, ts(s.now().Add(-grace)))
		n = int(tag.RowsAffected())
		return err
	})
	return n, err
}

// writeChunks reads r in chunks of ImageChunkSize, one buffer reused, and hands each
// to put with its sequence number; it returns how many bytes r held.
func writeChunks(r io.Reader, put func(seq int32, chunk []byte) error) (int64, error) {
	buf := make([]byte, ImageChunkSize)
	var size int64
	for seq := int32(0); ; seq++ {
		n, rerr := io.ReadFull(r, buf)
		if n > 0 {
			if err := put(seq, buf[:n]); err != nil {
				return 0, err
			}
			size += int64(n)
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			return size, nil
		}
		if rerr != nil {
			return 0, fmt.Errorf("read image: %w", rerr)
		}
	}
}

package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"

	"github.com/gardend/gardend/store"
)

// readPiece is how much of a stored chunk a reader fetches at a time. A download
// holds one piece while its client reads it, however slowly, rather than a whole
// chunk (ImageChunkSize, 256 KiB): with many stalled downloads that is the memory
// that counts. The chunk columns are stored EXTERNAL (uncompressed), so the database
// reads only the slice asked for.
const readPiece = 32 << 10

// chunkReader reads content stored in chunks (image_chunks, photo_chunks), one short
// query per piece of a chunk: a slow reader holds no connection, no transaction and
// at most one piece. Content removed while it is read (a newer upload replaced it)
// ends the stream with an error wrapping ErrNotFound rather than with wrong bytes.
type chunkReader struct {
	s    *Store
	ctx  context.Context
	path string
	what string // the content, in errors
	// query selects substring(data FROM $3 FOR $4) and octet_length(data) of chunk
	// $2 of path $1.
	query string
	seq   int32
	off   int64 // of the next piece in chunk seq
	piece []byte
	left  int64
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.piece) == 0 {
		if r.left <= 0 {
			return 0, io.EOF
		}
		var length int64
		err := r.s.doCtx(r.ctx, func(ctx context.Context) error {
			return r.s.pool.QueryRow(ctx, r.query, r.path, r.seq, r.off+1, readPiece).Scan(&r.piece, &length)
		})
		if errors.Is(err, pgx.ErrNoRows) {
			return 0, fmt.Errorf("%s was removed while it was read: %w", r.what, store.ErrNotFound)
		}
		if err != nil {
			return 0, err
		}
		switch {
		case int64(len(r.piece)) > r.left:
			return 0, fmt.Errorf("%s: chunk %d runs past its size", r.what, r.seq)
		case len(r.piece) == 0:
			return 0, fmt.Errorf("%s: chunk %d ends before its size", r.what, r.seq)
		}
		r.left -= int64(len(r.piece))
		if r.off += int64(len(r.piece)); r.off >= length {
			r.seq, r.off = r.seq+1, 0
		}
	}
	n := copy(p, r.piece)
	r.piece = r.piece[n:]
	return n, nil
}

func (r *chunkReader) Close() error {
	r.piece, r.left = nil, 0
	return nil
}

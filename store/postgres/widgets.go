package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/gardend/gardend/store"
)

// SaveWidgets stores doc byte-for-byte; it must be one valid JSON value.
func (s *Store) SaveWidgets(userID uint64, doc []byte) error {
	if err := store.ValidateWidgets(doc); err != nil {
		return err
	}
	err := s.write(func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO widgets (user_id, doc) VALUES ($1, $2)
			ON CONFLICT (user_id) DO UPDATE SET doc = excluded.doc`, userID, doc); err != nil {
			return err
		}
		return recordChange(ctx, tx, s.now(), store.KindUser, userID, 0, false)
	})
	if isForeignKey(err) {
		return fmt.Errorf("user %d: %w", userID, store.ErrNotFound)
	}
	return err
}

// Widgets returns the stored document, or nil when none was saved.
func (s *Store) Widgets(userID uint64) ([]byte, error) {
	var doc []byte
	err := s.do(func(ctx context.Context) error {
		err := s.pool.QueryRow(ctx, `SELECT doc FROM widgets WHERE user_id = $1`, userID).Scan(&doc)
		if errors.Is(err, pgx.ErrNoRows) {
			doc = nil
			return nil
		}
		return err
	})
	return doc, err
}

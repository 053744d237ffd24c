package bolt

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/gardend/gardend/store"
)

// TestMigrationBacksUpTheDatabaseFirst: before a schema migration runs on an existing
// database, a consistent copy of the file is written beside it; a copy that cannot be
// written stops the migration with the database unchanged.
func TestMigrationBacksUpTheDatabaseFirst(t *testing.T) {
	at := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	st, err := Open(path, Options{Now: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if st.MigrationBackup() != "" {
		t.Fatalf("a new database was backed up: %s", st.MigrationBackup())
	}
	if _, err := st.CreateUser(store.NewUser{Username: "ann", FirstName: "A", LastName: "B", PasswordHash: "x"}); err != nil {
		t.Fatal(err)
	}
	from := SchemaVersion()
	marker := []byte("migrated")
	next := append(slices.Clip(migrations), func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(marker, []byte{1})
	})
	backup := filepath.Join(dir, MigrationBackupName(from, at))

	// The copy cannot be written (its name is taken by a directory): no migration.
	if err := os.Mkdir(backup, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := st.migrateWith(next); err == nil || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("migration without a backup: %v", err)
	}
	if v := st.schemaVersion(t); v != from {
		t.Fatalf("schema %d after a refused migration, want %d", v, from)
	}
	os.Remove(backup)
	if tmps, _ := filepath.Glob(filepath.Join(dir, ".migration-*")); len(tmps) != 0 {
		t.Fatalf("temporary copies left: %v", tmps)
	}

	if err := st.migrateWith(next); err != nil {
		t.Fatal(err)
	}
	if st.MigrationBackup() != backup || st.schemaVersion(t) != from+1 {
		t.Fatalf("backup %q, schema %d", st.MigrationBackup(), st.schemaVersion(t))
	}
	old, err := Open(backup, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := old.Check(); err != nil {
		t.Fatal(err)
	}
	if v := old.schemaVersion(t); v != from {
		t.Fatalf("backup at schema %d, want %d", v, from)
	}
	if _, err := old.UserByUsername("ann"); err != nil {
		t.Fatalf("backup lacks the data: %v", err)
	}
}

func (s *Store) schemaVersion(t *testing.T) uint64 {
	t.Helper()
	stats, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	return stats.SchemaVersion
}

// TestOpenUpToDateWritesNothing: opening a database whose schema is current commits
// no transaction (each costs two fsyncs at every start); one that lacks a bucket
// still gets it.
func TestOpenUpToDateWritesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	txID := func(st *Store) (id int) {
		t.Helper()
		if err := st.db.View(func(tx *bbolt.Tx) error { id = tx.ID(); return nil }); err != nil {
			t.Fatal(err)
		}
		return id
	}
	st, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	created := txID(st)
	if err := st.db.Update(func(tx *bbolt.Tx) error { return tx.DeleteBucket(bucketImportMap) }); err != nil {
		t.Fatal(err)
	}
	st.Close()

	st, err = Open(path, Options{}) // a bucket is missing: written
	if err != nil {
		t.Fatal(err)
	}
	repaired := txID(st)
	if repaired <= created+1 {
		t.Errorf("a missing bucket was not created (transaction %d, was %d)", repaired, created)
	}
	if err := st.db.View(func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketImportMap) == nil {
			t.Error("the missing bucket is still missing")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	st, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got := txID(st); got != repaired {
		t.Errorf("opening an up-to-date database committed %d transactions", got-repaired)
	}
}

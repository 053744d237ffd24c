package bolt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	bbolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/gardend/gardend/store"
)

// FileName is the database file inside the data directory.
const FileName = "gardend.db"

// DefaultOpenTimeout is how long Open waits for a database another process holds.
const DefaultOpenTimeout = time.Second

// Options tune Open. The zero value is usable.
type Options struct {
	// Timeout bounds the wait for the file lock; bbolt's default is to wait forever.
	Timeout time.Duration
	// Now is the clock used for timestamps and expiry; time.Now when nil.
	Now func() time.Time
	// ReadOnly opens the file with a shared lock (inspection of a stopped server).
	ReadOnly bool
	// NoSync skips fsync on commit, for throwaway databases only (benchmarks that build
	// large fixtures): a crash can lose or corrupt the file.
	NoSync bool
	// ObserveTx, when set, is told how long each transaction of a store method took,
	// the wait for bbolt's write lock included (metrics).
	ObserveTx func(write bool, d time.Duration)
}

// Store is the opened database.
type Store struct {
	db    txDB
	now   func() time.Time
	users userCache
	// migrationBackup is the copy taken before Open migrated the schema.
	migrationBackup string
}

// Open opens (creating if needed) the database at path, creates the buckets and runs
// pending migrations. A file held by another process fails with ErrLocked within
// Options.Timeout (default DefaultOpenTimeout).
func Open(path string, opts Options) (*Store, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultOpenTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	dir := filepath.Dir(path)
	_, statErr := os.Stat(path)
	created := errors.Is(statErr, os.ErrNotExist) && !opts.ReadOnly
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: opts.Timeout, ReadOnly: opts.ReadOnly, NoSync: opts.NoSync})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, fmt.Errorf("%w: %s is in use (is gardend serve running with this data directory?)", store.ErrLocked, path)
		}
		return nil, openError(path, err)
	}
	if created {
		// bbolt syncs the new file but not the directory entry naming it: without this,
		// a power cut soon after the first start could lose the file with every write.
		if err := syncDir(dir); err != nil {
			_ = db.Close() // the sync error is the one to report
			return nil, fmt.Errorf("sync data directory: %w", err)
		}
	}
	s := &Store{db: txDB{DB: db, observe: opts.ObserveTx, epoch: time.Now()}, now: opts.Now}
	if !opts.ReadOnly {
		if err := s.migrate(); err != nil {
			_ = db.Close() // the migration error is the one to report
			return nil, err
		}
	}
	return s, nil
}

// openError names the database once: bbolt's own error is often an *fs.PathError
// that already says "open PATH", which would read "open PATH: open PATH: …".
func openError(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	hint := ""
	if errors.Is(err, fs.ErrPermission) {
		hint = " (run as the user that owns the data directory)"
	}
	return fmt.Errorf("open database %s: %w%s", path, err, hint)
}

// txDB is the database with View and Update timed for Options.ObserveTx; store
// methods call them as bbolt's own.
type txDB struct {
	*bbolt.DB
	observe func(write bool, d time.Duration)
	// epoch: durations are time.Since(epoch) differences, which read only the
	// monotonic clock; time.Now reads the wall clock too (every transaction, so
	// several times a request).
	epoch time.Time
}

func (d txDB) View(fn func(*bbolt.Tx) error) error {
	if d.observe == nil {
		return d.DB.View(fn)
	}
	start := time.Since(d.epoch)
	err := d.DB.View(fn)
	d.observe(false, time.Since(d.epoch)-start)
	return err
}

func (d txDB) Update(fn func(*bbolt.Tx) error) error {
	if d.observe == nil {
		return d.DB.Update(fn)
	}
	start := time.Since(d.epoch)
	err := d.DB.Update(fn)
	d.observe(true, time.Since(d.epoch)-start)
	return err
}

// Close closes the database file.
func (s *Store) Close() error { return s.db.Close() }

// Path is the database file's path.
func (s *Store) Path() string { return s.db.Path() }

// Now is the store's clock.
func (s *Store) Now() time.Time { return s.now() }

// Check runs bbolt's consistency check and returns every problem found, joined.
func (s *Store) Check() error {
	return s.db.View(func(tx *bbolt.Tx) error {
		var errs []error
		for err := range tx.Check() {
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	})
}

// WriteSnapshot writes a consistent copy of the whole database file to w.
func (s *Store) WriteSnapshot(w io.Writer) (int64, error) {
	var n int64
	err := s.db.View(func(tx *bbolt.Tx) error {
		var err error
		n, err = tx.WriteTo(w)
		return err
	})
	return n, err
}

// itob encodes an id as 8 big-endian bytes so keys sort numerically.
func itob(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}

func btoi(b []byte) uint64 { return binary.BigEndian.Uint64(b) }

// pairKey joins two ids: the key of an index entry (a, b), range-scannable by a.
func pairKey(a, b uint64) []byte {
	k := make([]byte, 16)
	binary.BigEndian.PutUint64(k, a)
	binary.BigEndian.PutUint64(k[8:], b)
	return k
}

// tripleKey joins three ids, range-scannable by a and by a|b.
func tripleKey(a, b, c uint64) []byte {
	k := make([]byte, 24)
	binary.BigEndian.PutUint64(k, a)
	binary.BigEndian.PutUint64(k[8:], b)
	binary.BigEndian.PutUint64(k[16:], c)
	return k
}

// idsUnder returns the id in the last 8 bytes of every key of b starting with prefix,
// in key order.
func idsUnder(b *bbolt.Bucket, prefix []byte) []uint64 {
	var ids []uint64
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		ids = append(ids, btoi(k[len(k)-8:]))
	}
	return ids
}

// anyUnder reports whether some key of b starts with prefix.
func anyUnder(b *bbolt.Bucket, prefix []byte) bool {
	k, _ := b.Cursor().Seek(prefix)
	return k != nil && bytes.HasPrefix(k, prefix)
}

func putJSON(b *bbolt.Bucket, key []byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.Put(key, data)
}

// getRecord decodes the record stored at id in bucket. kind names the record in
// errors: "garden 3: not found" wraps ErrNotFound, a damaged record does not.
func getRecord[T any](tx *bbolt.Tx, bucket []byte, kind string, id uint64) (T, error) {
	return getRecordIn[T](tx.Bucket(bucket), kind, id)
}

// getRecordIn is getRecord in a bucket already open.
func getRecordIn[T any](b *bbolt.Bucket, kind string, id uint64) (T, error) {
	var v T
	data := b.Get(itob(id))
	if data == nil {
		return v, fmt.Errorf("%s %d: %w", kind, id, store.ErrNotFound)
	}
	if err := json.Unmarshal(data, &v); err != nil {
		var zero T
		return zero, fmt.Errorf("decode %s %d: %w", kind, id, err)
	}
	return v, nil
}

// getEach loads the records with ids from bucket, in that order; the result is never
// nil. The bucket is opened once: a read transaction does not keep the buckets it
// opened, and opening a small bucket (stored inline in its parent) copies it, so
// opening it per record cost a copy of the whole bucket per record (12 KB per GET
// /gardens of 10 gardens).
func getEach[T any](tx *bbolt.Tx, bucket []byte, kind string, ids []uint64) ([]T, error) {
	b := tx.Bucket(bucket)
	out := make([]T, 0, len(ids))
	for _, id := range ids {
		v, err := getRecordIn[T](b, kind, id)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// eachUnder decodes every value of bucket under prefix (nil for all of them) into a
// fresh T and hands it to fn; decoding copies it out of bbolt.
func eachUnder[T any](tx *bbolt.Tx, bucket, prefix []byte, fn func(v T)) error {
	c := tx.Bucket(bucket).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var t T
		if err := json.Unmarshal(v, &t); err != nil {
			return fmt.Errorf("decode %s %q: %w", bucket, k, err)
		}
		fn(t)
	}
	return nil
}

// getJSON decodes the value at key into v inside the transaction (which copies it out).
func getJSON(b *bbolt.Bucket, key []byte, v any) error {
	data := b.Get(key)
	if data == nil {
		return store.ErrNotFound
	}
	return json.Unmarshal(data, v)
}

// Ping reads the schema version in a read transaction: the database answers.
func (s *Store) Ping() error {
	return s.db.View(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil || meta.Get(keySchemaVersion) == nil {
			return errors.New("the database has no schema version")
		}
		return nil
	})
}

// SnapshotName is the database file's name: backups hold the file under it.
func (s *Store) SnapshotName() string { return filepath.Base(s.db.Path()) }

// ObserveTx sets what is told how long each transaction took (Options.ObserveTx);
// call it before the store is shared between goroutines.
func (s *Store) ObserveTx(fn func(write bool, d time.Duration)) { s.db.observe = fn }

var (
	_ store.Snapshotter = (*Store)(nil)
	_ store.TxObserver  = (*Store)(nil)
)

// SchemaVersion is the schema version of the database: the one this build writes,
// since Open migrates.
func (s *Store) SchemaVersion() uint64 { return SchemaVersion() }

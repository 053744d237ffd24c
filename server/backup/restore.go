package backup

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gardend/gardend/server/atomicfile"
)

// Names inside the data directory while a restore runs (X is one restore's id). Each
// state is entered by an atomic rename, so a crash leaves a state named here.
const (
	// stagingPrefix: the archive being unpacked; never complete.
	stagingPrefix = restorePrefix + "tmp-"
	// newPrefix: unpacked and verified; the complete new data.
	newPrefix = restorePrefix + "new-"
	// savingPrefix: the old data being moved aside; the rest is still in place.
	savingPrefix = restorePrefix + "saving-"
	// oldPrefix: the complete old data, moved aside.
	oldPrefix = restorePrefix + "old-"
)

// RecoveryHelp tells an operator how to finish or undo a restore that was cut off
// (power cut, kill) from what it left in the data directory DIR.
const RecoveryHelp = `If a restore is cut off (power cut, kill, full disk), DIR keeps the state it reached,
each entered by an atomic rename, and every command that opens DIR (serve included)
refuses to start until it is resolved, naming what to run:

  gardend restore --resume --data DIR     finish it: DIR ends up with the backup's data
  gardend restore --rollback --data DIR   undo it: DIR ends up with the data from before

Both can themselves be cut off and run again. A restore cut off while unpacking can
only be rolled back (the data from before is untouched; then restore again).

The states, should you need to look by hand (X is one restore's id):

  .restore-tmp-X                     unpacking; DIR holds the data from before
  .restore-new-X alone               the backup's data is complete there; DIR holds
                                     the data from before
  .restore-new-X + .restore-saving-X the data from before is DIR plus .restore-saving-X
  .restore-new-X + .restore-old-X    the data from before is complete in .restore-old-X;
                                     the backup's data is DIR plus .restore-new-X
  .restore-old-X alone               the backup's data is in place
  .restore-old-X + .restore-trash-X  a rollback: the data from before is DIR plus
                                     .restore-old-X
  .restore-trash-X alone             DIR holds the data that stays

.restore-tmp-X and .restore-trash-X only ever hold data given up.`

// RestoreOptions tune Restore.
type RestoreOptions struct {
	ReadOptions
	// Force replaces a data directory that already holds data.
	Force bool
	// Prepare, when set, runs on the unpacked, verified archive in staging (the
	// directory that becomes dir's contents) before CheckDB: it may turn what was
	// unpacked into what dir must hold (a records archive into a database file). It
	// returns the path of the database CheckDB checks.
	Prepare func(staging string, m *Manifest) (dbPath string, err error)
	// CheckDB checks the unpacked database at path (consistency, schema version)
	// before anything in the data directory changes. Required.
	CheckDB func(path string, m *Manifest) error
	// BeforeSwitch runs after the archive is verified and right before the data
	// directory's contents are moved; an error stops the restore there.
	BeforeSwitch func() error
	// Now names the restore's directories; time.Now when nil.
	Now func() time.Time
	// Fault is for tests, as in RecoverOptions: it runs before each change to dir.
	Fault func(step string) error
}

// Restore replaces the contents of dir with the archive read from r. It verifies the
// whole archive (unpacked into a staging directory inside dir, so the final moves are
// renames on one file system) and runs CheckDB before it touches anything else in
// dir; a failure up to there leaves dir as it was. Then it moves the old contents
// aside, moves the new ones in, syncs, and only then deletes the old ones; a failure
// there rolls back. One restore runs on dir at a time. A crash leaves one of the
// states RecoveryHelp lists, from which Resume or Rollback go on.
func Restore(r io.Reader, dir string, opts RestoreOptions) (*Manifest, error) {
	if opts.CheckDB == nil {
		return nil, errors.New("restore: CheckDB is required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	created, err := ensureDir(dir)
	if err != nil {
		return nil, err
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	defer unlock()
	if err := checkTarget(dir, opts.Force); err != nil {
		if created {
			_ = os.Remove(dir) // empty; err is the one to report
		}
		return nil, err
	}
	var b [3]byte
	rand.Read(b[:])
	id := opts.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
	mv := &mover{dir: dir, id: id, fault: opts.Fault}

	m, err := unpack(r, mv, opts)
	if err != nil {
		// Given up by the same steps as a rollback, so that a crash meanwhile never
		// leaves half of the backup's data looking complete.
		if back := mv.backward(); back != nil {
			return nil, fmt.Errorf("%w; removing the unpacked copy failed too: %v", err, back)
		}
		if created {
			_ = os.Remove(dir) // empty again; err is the one to report
		}
		return nil, err
	}
	if err := mv.forward(); err != nil {
		return nil, mv.failed(err)
	}
	return m, nil
}

// unpack extracts the archive into .restore-tmp-X, checks it and renames it to
// .restore-new-X: the backup's data, complete and checked.
func unpack(r io.Reader, mv *mover, opts RestoreOptions) (*Manifest, error) {
	staging := mv.path(stagingPrefix)
	if err := mv.mkdir(staging); err != nil {
		return nil, fmt.Errorf("restore: staging directory: %w", err)
	}
	m, err := extract(r, staging, opts.ReadOptions)
	db := ""
	if err == nil {
		db = filepath.Join(staging, filepath.FromSlash(m.Database))
		if opts.Prepare != nil {
			db, err = opts.Prepare(staging, m)
		}
	}
	if err == nil {
		err = opts.CheckDB(db, m)
	}
	if err == nil {
		err = mv.rename(staging, mv.path(newPrefix))
	}
	if err == nil && opts.BeforeSwitch != nil {
		err = opts.BeforeSwitch()
	}
	return m, err
}

// failed reports a switch that failed with err, rolling back unless the backup's data
// is in place already.
func (m *mover) failed(err error) error {
	if st, serr := m.state(); serr == nil && (st == Replaced || st == Deleting) {
		return fmt.Errorf("restore: the backup's data is in place, but deleting the data from before failed: %w; run gardend restore --resume --data %s to delete it", err, quoteArg(m.dir))
	}
	if back := m.backward(); back != nil {
		return fmt.Errorf("restore stopped half-way: %w; rolling back failed too: %v. The data in %s is not consistent: see gardend restore --help", err, back, m.dir)
	}
	return fmt.Errorf("restore: %w (rolled back: the data from before is in place)", err)
}

// ensureDir creates dir when it is missing; created reports that it did.
func ensureDir(dir string) (created bool, err error) {
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		return false, nil // other errors show when dir is read
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, fmt.Errorf("restore: create %s: %w", dir, err)
	}
	// Everything restored into dir is synced; so must be the entry naming it.
	if err := atomicfile.SyncDir(filepath.Dir(dir)); err != nil {
		_ = os.Remove(dir) // empty; the sync error is the one to report
		return false, fmt.Errorf("restore: create %s: %w", dir, err)
	}
	return true, nil
}

// checkTarget makes sure dir may be restored into: no restore pending, and empty
// unless force.
func checkTarget(dir string, force bool) error {
	if err := CheckIdle(dir); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) > 0 && !force {
		return fmt.Errorf("%w: %s holds %s; pass --force to replace its contents", ErrNotEmpty, dir, summarise(names, 8))
	}
	return nil
}

func summarise(names []string, limit int) string {
	if len(names) <= limit {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:limit], ", "), len(names)-limit)
}

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
const RecoveryHelp = `If a restore is cut off (power cut, kill), DIR holds the state it reached, each
entered by an atomic rename; X is one restore's id:

  .restore-tmp-X     unpacking was cut off; DIR still holds the old data.
                     Delete .restore-tmp-X.
  .restore-new-X     (alone) the new data was complete, the old data untouched in DIR.
                     Delete .restore-new-X; then run restore again if need be.
  .restore-saving-X  with .restore-new-X: the old data was being moved aside. The old
                     data is DIR plus .restore-saving-X: move everything in
                     .restore-saving-X back into DIR and delete .restore-new-X.
  .restore-old-X     with .restore-new-X: the old data is complete in .restore-old-X,
                     the new data is .restore-new-X plus DIR. Move everything in
                     .restore-new-X into DIR and delete it (new data), or delete DIR's
                     other entries and move .restore-old-X's back (old data).
  .restore-old-X     (alone) the new data is in place: delete .restore-old-X.

Stop gardend serve before any of this. restore refuses to run while such names exist.`

// RestoreOptions tune Restore.
type RestoreOptions struct {
	ReadOptions
	// Force replaces a data directory that already holds data.
	Force bool
	// CheckDB checks the unpacked database at path (consistency, schema version)
	// before anything in the data directory changes. Required.
	CheckDB func(path string, m *Manifest) error
	// BeforeSwitch runs after the archive is verified and right before the data
	// directory's contents are moved; an error stops the restore there.
	BeforeSwitch func() error
	// Now names the restore's directories; time.Now when nil.
	Now func() time.Time
}

// Restore replaces the contents of dir with the archive read from r. It verifies the
// whole archive (unpacked into a staging directory inside dir, so the final moves are
// renames on one file system) and runs CheckDB before it touches anything else in
// dir; a failure up to there leaves dir as it was. Then it moves the old contents
// aside, moves the new ones in, syncs, and only then deletes the old ones.
// RecoveryHelp describes every state a crash can leave.
func Restore(r io.Reader, dir string, opts RestoreOptions) (*Manifest, error) {
	if opts.CheckDB == nil {
		return nil, errors.New("restore: CheckDB is required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	created, err := prepareTarget(dir, opts.Force)
	if err != nil {
		return nil, err
	}
	var b [3]byte
	rand.Read(b[:])
	id := opts.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
	staging := filepath.Join(dir, stagingPrefix+id)
	fresh := filepath.Join(dir, newPrefix+id)

	undo := func() {
		os.RemoveAll(staging)
		os.RemoveAll(fresh)
		if created {
			os.Remove(dir)
		}
	}
	if err := os.Mkdir(staging, 0o700); err != nil {
		undo()
		return nil, fmt.Errorf("restore: staging directory: %w", err)
	}
	m, err := extract(r, staging, opts.ReadOptions)
	if err == nil {
		err = opts.CheckDB(filepath.Join(staging, filepath.FromSlash(m.Database)), m)
	}
	if err == nil {
		err = renameSync(staging, fresh, dir)
	}
	if err == nil && opts.BeforeSwitch != nil {
		err = opts.BeforeSwitch()
	}
	if err != nil {
		undo()
		return nil, err
	}
	if err := switchTo(dir, fresh, id); err != nil {
		return nil, err
	}
	return m, nil
}

// prepareTarget makes sure dir exists and may be restored into; created reports
// that it made dir.
func prepareTarget(dir string, force bool) (created bool, err error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return false, fmt.Errorf("restore: create %s: %w", dir, err)
		}
		// Everything restored into dir is synced; so must be the entry naming it.
		if err := syncDir(filepath.Dir(dir)); err != nil {
			os.Remove(dir)
			return false, fmt.Errorf("restore: create %s: %w", dir, err)
		}
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("restore: %w", err)
	}
	var leftovers, names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), restorePrefix) {
			leftovers = append(leftovers, e.Name())
		} else {
			names = append(names, e.Name())
		}
	}
	switch {
	case len(leftovers) > 0:
		return false, fmt.Errorf("%w: %s holds %s; see gardend restore --help to finish or undo it first", ErrInterrupted, dir, strings.Join(leftovers, ", "))
	case len(names) > 0 && !force:
		return false, fmt.Errorf("%w: %s holds %s; pass --force to replace its contents", ErrNotEmpty, dir, summarise(names, 8))
	}
	return false, nil
}

func summarise(names []string, limit int) string {
	if len(names) <= limit {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:limit], ", "), len(names)-limit)
}

// switchTo moves dir's contents into .restore-saving-X, renames that to
// .restore-old-X (now the old data is complete there), moves fresh's contents into
// dir, removes fresh, and finally deletes the old data. Each step is synced before
// the next, so a crash leaves one of the states RecoveryHelp lists.
func switchTo(dir, fresh, id string) error {
	saving := filepath.Join(dir, savingPrefix+id)
	old := filepath.Join(dir, oldPrefix+id)
	if err := os.Mkdir(saving, 0o700); err != nil {
		os.RemoveAll(fresh)
		return fmt.Errorf("restore: %w (nothing changed)", err)
	}
	if err := moveAll(dir, saving, true); err != nil {
		// Put back what moved (a mount point in dir cannot be renamed, for one).
		if back := moveAll(saving, dir, false); back != nil {
			return fmt.Errorf("restore: moving the old data aside: %w; moving it back failed too (%v): see gardend restore --help", err, back)
		}
		os.Remove(saving)
		os.RemoveAll(fresh)
		syncDir(dir)
		return fmt.Errorf("restore: moving the old data aside: %w (the old data is back in place)", err)
	}
	if err := syncDir(saving); err != nil {
		return stuck(err, dir)
	}
	if err := renameSync(saving, old, dir); err != nil {
		return stuck(err, dir)
	}
	if err := moveAll(fresh, dir, false); err != nil {
		return stuck(err, dir)
	}
	if err := syncDir(dir); err != nil {
		return stuck(err, dir)
	}
	if err := os.Remove(fresh); err != nil {
		return stuck(err, dir)
	}
	if err := syncDir(dir); err != nil {
		return stuck(err, dir)
	}
	if err := os.RemoveAll(old); err != nil {
		return fmt.Errorf("restore: the new data is in place, but deleting the old copy failed: %w; delete %s", err, old)
	}
	return syncDir(dir)
}

func stuck(err error, dir string) error {
	return fmt.Errorf("restore stopped half-way: %w; the data in %s is not consistent: see gardend restore --help", err, dir)
}

// moveAll renames every entry of from into to. skipRestore leaves restore's own
// directories where they are (when from is the data directory itself).
func moveAll(from, to string, skipRestore bool) error {
	entries, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if skipRestore && strings.HasPrefix(e.Name(), restorePrefix) {
			continue
		}
		if err := os.Rename(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func renameSync(from, to, parent string) error {
	if err := os.Rename(from, to); err != nil {
		return err
	}
	return syncDir(parent)
}

package backup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gardend/gardend/server/atomicfile"
)

// State is how far a restore got, read from the names it left in the data directory.
// Every state is entered by one atomic rename (or mkdir), so a restore cut off at any
// point leaves exactly one of them, and Resume and Rollback can go on from it.
type State int

// The states of a restore, in the order a restore passes through them (RollingBack
// only on the way back). X is one restore's id.
const (
	// Unpacking: .restore-tmp-X. The archive was being unpacked; the data from before
	// is untouched in the directory.
	Unpacking State = iota + 1
	// Unpacked: .restore-new-X alone. The backup's data is complete and checked there;
	// the data from before is untouched in the directory.
	Unpacked
	// MovingAside: .restore-new-X and .restore-saving-X. The data from before was being
	// moved into .restore-saving-X: it is that plus what is still in the directory.
	MovingAside
	// MovingIn: .restore-new-X and .restore-old-X. The data from before is complete in
	// .restore-old-X; the backup's data is the directory plus .restore-new-X.
	MovingIn
	// Replaced: .restore-old-X alone. The backup's data is in place; the data from
	// before waits in .restore-old-X to be deleted.
	Replaced
	// Deleting: .restore-trash-X alone. Whichever data was given up is being deleted;
	// the directory holds the data that stays.
	Deleting
	// RollingBack: .restore-old-X and .restore-trash-X. A rollback gave up the
	// backup's data and was moving the data from before back from .restore-old-X.
	RollingBack
)

// trashPrefix: data given up (the old data after a restore, the new data after a
// rollback), renamed here in one step so that it is never mistaken for data to keep
// while it is deleted.
const trashPrefix = restorePrefix + "trash-"

var stateNames = map[State]string{
	Unpacking:   "unpacking",
	Unpacked:    "unpacked",
	MovingAside: "moving the data from before aside",
	MovingIn:    "moving the backup's data in",
	Replaced:    "replaced",
	Deleting:    "deleting what was given up",
	RollingBack: "rolling back",
}

func (s State) String() string {
	if n, ok := stateNames[s]; ok {
		return n
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Interruption is what a restore that did not finish left in a data directory.
type Interruption struct {
	Dir   string
	ID    string
	State State
	// Names are the restore's entries in Dir, sorted.
	Names []string
}

// where says where the data stands in state s, for an operator deciding what to do.
func (in *Interruption) where() string {
	switch in.State {
	case Unpacking:
		return "the archive was being unpacked; the data from before is untouched"
	case Unpacked:
		return "the backup's data was unpacked and checked; the data from before is untouched"
	case MovingAside:
		return "the data from before was being moved aside; neither copy is complete in the directory"
	case MovingIn:
		return "the backup's data was being moved in; neither copy is complete in the directory"
	case Replaced:
		return "the backup's data is in place; the data from before was not deleted yet"
	case Deleting:
		return "the data that stays is in place; what was given up was being deleted"
	case RollingBack:
		return "a rollback was moving the data from before back; neither copy is complete in the directory"
	}
	return in.State.String()
}

// Inspect reports what an interrupted restore left in dir: nil when there is nothing
// (or no dir). Leftovers it cannot read as one restore's state (two restores' ids, an
// unknown name, an impossible combination) are an error wrapping ErrInterrupted that
// asks for a look by hand.
func Inspect(dir string) (*Interruption, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the data directory (looking for restore leftovers): %w", err)
	}
	in := &Interruption{Dir: dir}
	kinds := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, restorePrefix) {
			continue
		}
		in.Names = append(in.Names, name)
		kind, id, ok := splitRestoreName(name)
		if !ok || (in.ID != "" && id != in.ID) {
			return nil, manualHelp(in)
		}
		in.ID = id
		kinds[kind] = true
	}
	if len(in.Names) == 0 {
		return nil, nil
	}
	key := strings.Join(slices.Sorted(func(yield func(string) bool) {
		for k := range kinds {
			if !yield(k) {
				return
			}
		}
	}), "+")
	switch key {
	case stagingPrefix:
		in.State = Unpacking
	case newPrefix:
		in.State = Unpacked
	case newPrefix + "+" + savingPrefix:
		in.State = MovingAside
	case newPrefix + "+" + oldPrefix:
		in.State = MovingIn
	case oldPrefix:
		in.State = Replaced
	case trashPrefix:
		in.State = Deleting
	case oldPrefix + "+" + trashPrefix:
		in.State = RollingBack
	default:
		return nil, manualHelp(in)
	}
	return in, nil
}

// splitRestoreName splits ".restore-new-X" into its kind (the prefix) and id X.
func splitRestoreName(name string) (kind, id string, ok bool) {
	for _, p := range []string{stagingPrefix, newPrefix, savingPrefix, oldPrefix, trashPrefix} {
		if id, ok := strings.CutPrefix(name, p); ok && id != "" {
			return p, id, true
		}
	}
	return "", "", false
}

func manualHelp(in *Interruption) error {
	return fmt.Errorf("%w: %s holds %s, which is not what one restore leaves; stop gardend and sort it out by hand (see gardend restore --help)",
		ErrInterrupted, in.Dir, strings.Join(in.Names, ", "))
}

// CheckIdle returns nil when no restore is pending in dir, and otherwise an error
// wrapping ErrInterrupted that says where the data stands and names the command that
// finishes or undoes the restore. Everything that opens a data directory calls it
// first: a server started on a half-restored directory would open (or create) a
// database that does not match the files beside it.
func CheckIdle(dir string) error {
	in, err := Inspect(dir)
	if err != nil || in == nil {
		return err
	}
	return in.Err()
}

// Guard runs open (which opens the data directory's database) while no restore can
// start in dir, after checking that none is pending there: it holds the lock that
// Restore, Resume and Rollback hold while they run. A restore that starts afterwards
// finds the database held and refuses. Without dir, open runs as is.
func Guard(dir string, open func() error) error {
	unlock, err := lockDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return open()
	}
	if err != nil {
		return err
	}
	defer unlock()
	if err := CheckIdle(dir); err != nil {
		return err
	}
	return open()
}

// Err is the error CheckIdle returns for in.
func (in *Interruption) Err() error {
	resume := fmt.Sprintf("gardend restore --resume --data %s", quoteArg(in.Dir))
	rollback := fmt.Sprintf("gardend restore --rollback --data %s", quoteArg(in.Dir))
	var todo string
	switch in.State {
	case Unpacking, RollingBack:
		todo = "undo it with `" + rollback + "` (the data from before)"
	case Deleting:
		todo = "finish it with `" + resume + "`"
	default:
		todo = "finish it with `" + resume + "` (the backup's data) or undo it with `" + rollback + "` (the data from before)"
	}
	return fmt.Errorf("%w: %s holds %s: %s. Stop gardend serve if it runs, then %s",
		ErrInterrupted, in.Dir, strings.Join(in.Names, ", "), in.where(), todo)
}

// quoteArg quotes a path for a shell command line when it needs it.
func quoteArg(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == '+' || r == ':' || r == ',' || r == '@' ||
			(r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// RecoverOptions tune Resume and Rollback.
type RecoverOptions struct {
	// BeforeChange runs once the directory is locked, before anything in it changes
	// (the CLI checks that no server holds the database); an error stops there.
	BeforeChange func() error
	// Fault is for tests: it runs before each change to the directory (a rename, a
	// mkdir, a removal), named by step; an error fails the operation there. A test
	// simulates a kill by panicking in it.
	Fault func(step string) error
}

// ErrCannotResume: the restore cannot be finished from where it stopped (the archive
// was not fully unpacked, or a rollback already gave up the backup's data).
var ErrCannotResume = errors.New("the restore cannot be finished from where it stopped")

// Resume finishes the restore that was cut off in dir: afterwards dir holds the
// backup's data and no leftovers. It returns what it found (nil when nothing was
// pending). Each step is synced before the next, so Resume itself may be cut off and
// run again.
func Resume(dir string, opts RecoverOptions) (*Interruption, error) {
	return recoverDir(dir, opts, true)
}

// Rollback undoes the restore that was cut off in dir: afterwards dir holds the data
// from before the restore and no leftovers. Like Resume, it may be cut off and run
// again.
func Rollback(dir string, opts RecoverOptions) (*Interruption, error) {
	return recoverDir(dir, opts, false)
}

func recoverDir(dir string, opts RecoverOptions, forward bool) (*Interruption, error) {
	unlock, err := lockDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer unlock()
	in, err := Inspect(dir)
	if err != nil || in == nil {
		return nil, err
	}
	if forward && (in.State == Unpacking || in.State == RollingBack) {
		return in, fmt.Errorf("%w: %s (%s); run gardend restore --rollback --data %s", ErrCannotResume, dir, in.where(), quoteArg(dir))
	}
	if opts.BeforeChange != nil {
		if err := opts.BeforeChange(); err != nil {
			return in, err
		}
	}
	m := &mover{dir: dir, id: in.ID, fault: opts.Fault}
	if forward {
		err = m.forward()
	} else {
		err = m.backward()
	}
	return in, err
}

// mover walks a restore's states in dir. Each method re-reads the state from the
// directory and takes one step, so it goes on from wherever a crash stopped.
type mover struct {
	dir, id string
	fault   func(step string) error
}

func (m *mover) path(prefix string) string { return filepath.Join(m.dir, prefix+m.id) }

// state is the directory's current state; 0 when no leftover of the restore is left.
func (m *mover) state() (State, error) {
	in, err := Inspect(m.dir)
	if err != nil || in == nil {
		return 0, err
	}
	if in.ID != m.id {
		return 0, manualHelp(in)
	}
	return in.State, nil
}

// walk re-reads the state and takes step in it until no leftover of the restore is
// left.
func (m *mover) walk(step func(State) error) error {
	for {
		st, err := m.state()
		if err != nil || st == 0 {
			return err
		}
		if err := step(st); err != nil {
			return err
		}
	}
}

// forward takes the steps from Unpacked (or any later state) to the backup's data in
// place with no leftovers.
func (m *mover) forward() error {
	return m.walk(func(st State) error {
		switch st {
		case Unpacked:
			return m.mkdir(m.path(savingPrefix))
		case MovingAside:
			if err := m.moveAll(m.dir, m.path(savingPrefix)); err != nil {
				return err
			}
			return m.rename(m.path(savingPrefix), m.path(oldPrefix))
		case MovingIn:
			if err := m.moveAll(m.path(newPrefix), m.dir); err != nil {
				return err
			}
			return m.remove(m.path(newPrefix))
		case Replaced:
			return m.rename(m.path(oldPrefix), m.path(trashPrefix))
		case Deleting:
			return m.removeAll(m.path(trashPrefix))
		}
		return fmt.Errorf("%w: %s (%s)", ErrCannotResume, m.dir, st)
	})
}

// backward takes the steps from any state back to the data from before in place with
// no leftovers.
func (m *mover) backward() error {
	return m.walk(func(st State) error {
		switch st {
		case Unpacking:
			return m.removeAll(m.path(stagingPrefix))
		case Unpacked:
			return m.rename(m.path(newPrefix), m.path(trashPrefix))
		case MovingAside:
			if err := m.moveAll(m.path(savingPrefix), m.dir); err != nil {
				return err
			}
			return m.remove(m.path(savingPrefix))
		case MovingIn:
			if err := m.moveAll(m.dir, m.path(newPrefix)); err != nil {
				return err
			}
			return m.rename(m.path(newPrefix), m.path(trashPrefix))
		case Replaced:
			// An empty .restore-new-X beside .restore-old-X is MovingIn with all of
			// the backup's data in the directory: from there it goes back as above.
			return m.mkdir(m.path(newPrefix))
		case RollingBack:
			if err := m.moveAll(m.path(oldPrefix), m.dir); err != nil {
				return err
			}
			return m.remove(m.path(oldPrefix))
		case Deleting:
			return m.removeAll(m.path(trashPrefix))
		}
		return fmt.Errorf("restore: cannot roll back from state %s", st)
	})
}

func (m *mover) step(what string) error {
	if m.fault == nil {
		return nil
	}
	return m.fault(what)
}

func (m *mover) rel(p string) string {
	if r, err := filepath.Rel(m.dir, p); err == nil {
		return r
	}
	return p
}

// rename renames one of restore's own directories (a change of state) and syncs.
func (m *mover) rename(from, to string) error {
	if err := m.move(from, to); err != nil {
		return err
	}
	return atomicfile.SyncDir(m.dir)
}

// move renames one entry, never over an existing one: os.Rename would silently
// replace a file or an empty directory, which may be data of the other side.
func (m *mover) move(from, to string) error {
	if err := m.step("rename " + m.rel(from) + " " + m.rel(to)); err != nil {
		return err
	}
	if _, err := os.Lstat(to); err == nil {
		return fmt.Errorf("restore: both %s and %s exist; move one of them away by hand", from, to)
	}
	if err := os.Rename(from, to); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	return nil
}

// moveAll renames every entry of from into to, leaving restore's own entries where
// they are when from is the data directory, and syncs both: the next change of state
// must not reach the disk before these moves. Cut off half-way, the state is the same
// one with some entries moved, which each state allows for.
func (m *mover) moveAll(from, to string) error {
	entries, err := os.ReadDir(from)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	for _, e := range entries {
		if from == m.dir && strings.HasPrefix(e.Name(), restorePrefix) {
			continue
		}
		if err := m.move(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
			return err
		}
	}
	if err := atomicfile.SyncDir(to); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if err := atomicfile.SyncDir(from); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	return nil
}

func (m *mover) mkdir(p string) error {
	if err := m.step("mkdir " + m.rel(p)); err != nil {
		return err
	}
	if err := os.Mkdir(p, 0o700); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	return atomicfile.SyncDir(m.dir)
}

// remove removes an empty directory: one that still holds something is an error, not
// data lost.
func (m *mover) remove(p string) error {
	if err := m.step("remove " + m.rel(p)); err != nil {
		return err
	}
	if err := os.Remove(p); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	return atomicfile.SyncDir(m.dir)
}

// removeAll deletes data that was given up: only .restore-tmp-X and .restore-trash-X.
func (m *mover) removeAll(p string) error {
	if err := m.step("delete " + m.rel(p)); err != nil {
		return err
	}
	if err := os.RemoveAll(p); err != nil {
		return fmt.Errorf("restore: deleting %s: %w", p, err)
	}
	return atomicfile.SyncDir(m.dir)
}

package backup_test

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gardend/gardend/server/backup"
	"github.com/gardend/gardend/server/backup/backuptest"
)

// oldData is a data directory before a restore: what a rollback must give back.
var oldData = map[string]string{
	"gardend.db":            "old database",
	"images/old.png":        "old image",
	"pointclouds/p/old.ply": "old cloud",
	"notes.txt":             "an operator's file",
}

// newData is what validEntries restores.
func newData() map[string]string {
	out := map[string]string{}
	for _, e := range validEntries() {
		out[e.Path] = string(e.Body)
	}
	return out
}

// snapshot reads every regular file under dir; directories only show through them.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameData(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if !maps.Equal(got, want) {
		t.Fatalf("%s:\n got %v\nwant %v", what, got, want)
	}
}

// errKilled stands for SIGKILL: the fault hook panics with it, so nothing the
// operation would do on an error (clean-up, rollback) runs.
var errKilled = errors.New("killed")

// killAt returns a fault hook that kills the operation before its step k (0-based)
// and counts the steps into *n.
func killAt(k int, n *int, steps *[]string) func(string) error {
	return func(step string) error {
		if steps != nil {
			*steps = append(*steps, step)
		}
		if *n == k {
			panic(errKilled)
		}
		*n++
		return nil
	}
}

// survive runs f and reports whether the fault hook killed it.
func survive(t *testing.T, f func() error) (killed bool, err error) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			if p != errKilled {
				panic(p)
			}
			killed = true
		}
	}()
	return false, f()
}

func restoreInto(t *testing.T, dir string, fault func(string) error) error {
	t.Helper()
	_, err := backup.Restore(bytes.NewReader(backuptest.Archive(validEntries(), nil)), dir,
		backup.RestoreOptions{CheckDB: okDB, Force: true, Fault: fault})
	return err
}

// countSteps runs op to the end and returns the steps it took.
func countSteps(t *testing.T, op func(fault func(string) error) error) []string {
	t.Helper()
	var n int
	var steps []string
	if killed, err := survive(t, func() error { return op(killAt(-1, &n, &steps)) }); killed || err != nil {
		t.Fatalf("uninterrupted run: killed %v, %v", killed, err)
	}
	return steps
}

// A restore killed before any of its steps (every mkdir, rename and removal) leaves
// a state from which both --resume and --rollback reach a consistent directory, even
// when they are killed too, at any of their own steps, and run again.
func TestRestoreKilledAtEveryStepResumesOrRollsBack(t *testing.T) {
	steps := countSteps(t, func(fault func(string) error) error {
		dir := t.TempDir()
		writeFiles(t, dir, oldData)
		return restoreInto(t, dir, fault)
	})
	if len(steps) < 10 {
		t.Fatalf("only %d steps: %q", len(steps), steps)
	}
	var mu sync.Mutex
	states := map[string]bool{}
	// A group, so that the parallel steps are done before the states are counted.
	t.Run("kill before step", func(t *testing.T) {
		for k, step := range steps {
			t.Run(fmt.Sprintf("%02d %s", k, strings.Split(step, " ")[0]), func(t *testing.T) {
				t.Parallel() // most of the time is spent in fsync
				killRestoreAt(t, k, step, func(s backup.State) {
					mu.Lock()
					states[s.String()] = true
					mu.Unlock()
				})
			})
		}
	})
	for _, want := range []backup.State{backup.Unpacking, backup.Unpacked, backup.MovingAside, backup.MovingIn, backup.Replaced, backup.Deleting} {
		if !states[want.String()] {
			t.Errorf("no kill landed in state %s (steps %q)", want, steps)
		}
	}
}

// killRestoreAt kills a restore before its step k, then resumes and rolls back
// copies of what it left, each also killed at every one of its own steps.
func killRestoreAt(t *testing.T, k int, step string, reached func(backup.State)) {
	crashed := t.TempDir()
	writeFiles(t, crashed, oldData)
	var n int
	if killed, err := survive(t, func() error { return restoreInto(t, crashed, killAt(k, &n, nil)) }); !killed {
		t.Fatalf("restore was not killed at step %d (%s): %v", k, step, err)
	}
	in, err := backup.Inspect(crashed)
	if err != nil {
		t.Fatal(err)
	}
	if k == 0 {
		if in != nil {
			t.Fatalf("killed before its first step, restore left %v", in.Names)
		}
		sameData(t, "killed before the first step", snapshot(t, crashed), oldData)
		return
	}
	if in == nil {
		t.Fatalf("killed before step %s, restore left no trace", step)
	}
	reached(in.State)
	// What serve and the other commands see: a refusal naming the way out.
	idle := backup.CheckIdle(crashed)
	if !errors.Is(idle, backup.ErrInterrupted) || !strings.Contains(idle.Error(), "gardend restore --") || !strings.Contains(idle.Error(), crashed) {
		t.Fatalf("CheckIdle: %v", idle)
	}
	if in.State != backup.Unpacking && !strings.Contains(idle.Error(), "--resume --data "+crashed) {
		t.Fatalf("CheckIdle does not offer --resume in state %s: %v", in.State, idle)
	}
	if in.State != backup.Deleting && !strings.Contains(idle.Error(), "--rollback --data "+crashed) {
		t.Fatalf("CheckIdle does not offer --rollback in state %s: %v", in.State, idle)
	}
	// Deleting: the data that stays is in place whichever way; only the copy
	// given up is left to delete.
	rolledBack := oldData
	if in.State == backup.Deleting {
		rolledBack = newData()
	}

	for _, tc := range []struct {
		name    string
		op      func(string, backup.RecoverOptions) (*backup.Interruption, error)
		want    map[string]string
		refused bool
	}{
		{"resume", backup.Resume, newData(), in.State == backup.Unpacking},
		{"rollback", backup.Rollback, rolledBack, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.refused {
				dir := copyDir(t, crashed)
				if _, err := tc.op(dir, backup.RecoverOptions{}); !errors.Is(err, backup.ErrCannotResume) || !strings.Contains(err.Error(), "--rollback") {
					t.Fatalf("got %v, want ErrCannotResume naming --rollback", err)
				}
				if after, _ := backup.Inspect(dir); after == nil || after.State != in.State {
					t.Fatalf("a refused resume changed the state to %v", after)
				}
				return
			}
			recSteps := countSteps(t, func(fault func(string) error) error {
				_, err := tc.op(copyDir(t, crashed), backup.RecoverOptions{Fault: fault})
				return err
			})
			for j := 0; j <= len(recSteps); j++ {
				dir := copyDir(t, crashed)
				var n int
				killed, err := survive(t, func() error {
					_, err := tc.op(dir, backup.RecoverOptions{Fault: killAt(j, &n, nil)})
					return err
				})
				if killed == (j == len(recSteps)) || err != nil {
					t.Fatalf("%s killed at step %d of %d: killed %v, %v", tc.name, j, len(recSteps), killed, err)
				}
				if killed {
					if _, err := tc.op(dir, backup.RecoverOptions{}); err != nil {
						t.Fatalf("%s again after a kill at step %d (%s): %v", tc.name, j, recSteps[j], err)
					}
				}
				sameData(t, fmt.Sprintf("after %s (killed at its step %d)", tc.name, j), snapshot(t, dir), tc.want)
				if err := backup.CheckIdle(dir); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// copyDir copies a crashed directory so each recovery starts from the same state.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "data")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// A failure (not a kill) while switching rolls back by itself.
func TestRestoreFailingMidSwitchRollsBack(t *testing.T) {
	steps := countSteps(t, func(fault func(string) error) error {
		dir := t.TempDir()
		writeFiles(t, dir, oldData)
		return restoreInto(t, dir, fault)
	})
	boom := errors.New("disk on fire")
	for k, step := range steps {
		dir := t.TempDir()
		writeFiles(t, dir, oldData)
		n := 0
		err := restoreInto(t, dir, func(string) error {
			n++
			if n-1 == k {
				return boom
			}
			return nil
		})
		if !errors.Is(err, boom) {
			t.Fatalf("step %d (%s): got %v", k, step, err)
		}
		want := oldData
		switch {
		case strings.Contains(err.Error(), "the backup's data is in place"):
			// Only deleting the old copy failed: the new data stays; resume deletes it.
			want = newData()
			if _, err := backup.Resume(dir, backup.RecoverOptions{}); err != nil {
				t.Fatal(err)
			}
		case !strings.Contains(err.Error(), "rolled back") && !strings.HasPrefix(step, "mkdir .restore-tmp-") && !strings.HasPrefix(step, "rename .restore-tmp-"):
			t.Fatalf("step %d (%s): %v does not say it rolled back", k, step, err)
		}
		sameData(t, "after step "+step+" failed", snapshot(t, dir), want)
		if err := backup.CheckIdle(dir); err != nil {
			t.Fatal(err)
		}
	}
}

func TestInspectRefusesWhatOneRestoreCannotLeave(t *testing.T) {
	for _, names := range [][]string{
		{".restore-new-A", ".restore-old-B"},
		{".restore-saving-A"},
		{".restore-tmp-A", ".restore-new-A"},
		{".restore-whatever"},
	} {
		dir := t.TempDir()
		for _, n := range names {
			if err := os.Mkdir(filepath.Join(dir, n), 0o700); err != nil {
				t.Fatal(err)
			}
		}
		_, err := backup.Inspect(dir)
		if !errors.Is(err, backup.ErrInterrupted) || !strings.Contains(err.Error(), "by hand") {
			t.Errorf("%q: got %v", names, err)
		}
		if _, err := backup.Resume(dir, backup.RecoverOptions{}); !errors.Is(err, backup.ErrInterrupted) {
			t.Errorf("%q: resume got %v", names, err)
		}
	}
}

// A move never replaces what is already there: an empty directory (say images/ made
// by a server started on a half-restored directory) would vanish under os.Rename.
func TestResumeRefusesToMoveOverAnEntry(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		".restore-old-X/gardend.db":   "old",
		".restore-new-X/images/a.png": "new image",
		".restore-new-X/gardend.db":   "new",
	})
	if err := os.Mkdir(filepath.Join(dir, "images"), 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := backup.Resume(dir, backup.RecoverOptions{})
	if err == nil || !strings.Contains(err.Error(), "both") || !strings.Contains(err.Error(), "by hand") {
		t.Fatalf("got %v", err)
	}
	if in, _ := backup.Inspect(dir); in == nil || in.State != backup.MovingIn {
		t.Fatalf("state after the refusal: %+v", in)
	}
}

func TestRecoverWithNothingPending(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, oldData)
	for _, op := range []func(string, backup.RecoverOptions) (*backup.Interruption, error){backup.Resume, backup.Rollback} {
		if in, err := op(dir, backup.RecoverOptions{}); in != nil || err != nil {
			t.Fatalf("got %+v, %v", in, err)
		}
	}
	sameData(t, "untouched", snapshot(t, dir), oldData)
	if in, err := backup.Resume(filepath.Join(dir, "missing"), backup.RecoverOptions{}); in != nil || err != nil {
		t.Fatalf("missing directory: %+v, %v", in, err)
	}
}

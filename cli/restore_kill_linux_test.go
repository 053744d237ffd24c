//go:build linux

package cli_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/gardend/gardend/server/backup"
)

// watchCreate reports the first entry created in dir (or renamed into it) whose name
// starts with prefix, through inotify: it is seen within microseconds, while the
// process that made it is still at work.
func watchCreate(t *testing.T, dir, prefix string) <-chan string {
	t.Helper()
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_CREATE|syscall.IN_MOVED_TO); err != nil {
		syscall.Close(fd)
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "inotify")
	t.Cleanup(func() { f.Close() })
	found := make(chan string, 1)
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := f.Read(buf)
			if err != nil {
				return
			}
			for off := 0; off+syscall.SizeofInotifyEvent <= n; {
				ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
				name := string(bytes.TrimRight(buf[off+syscall.SizeofInotifyEvent:off+syscall.SizeofInotifyEvent+int(ev.Len)], "\x00"))
				off += syscall.SizeofInotifyEvent + int(ev.Len)
				if strings.HasPrefix(name, prefix) {
					found <- name
					return
				}
			}
		}
	}()
	return found
}

// gardendCmd runs the built binary without the GARDEND_* variables of the environment.
func gardendCmd(bin string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GARDEND_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	return cmd
}

// The real binary killed with SIGKILL in the middle of a restore, at the moment the
// restore creates the named directory, then started as systemd would: serve refuses
// and names the recovery commands, which then work on the real binary too.
func TestRestoreBinaryKilledThenServe(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gardend; skipped with -short")
	}
	bin := buildGardend(t)
	archive := filepath.Join(t.TempDir(), "b.tar")
	a, _ := realArchive(t)
	if err := os.WriteFile(archive, a, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, at string
		extra    int
	}{
		{"while unpacking", ".restore-tmp-", 0},
		// Hundreds of an operator's files, sorted before the database and the images,
		// make moving the old data aside take long enough (a few ms) for the kill to
		// land in the middle of it most of the time. A loaded machine may land it
		// later; the checks follow the state it landed in.
		{"while moving the old data aside", ".restore-saving-", 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			oldImage := filepath.Join(dir, filepath.FromSlash(gardenWithImage(t, dir)))
			for i := range tc.extra {
				if err := os.WriteFile(filepath.Join(dir, operatorFile(i)), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			seen := watchCreate(t, dir, tc.at)
			restore := gardendCmd(bin, "restore", archive, "--data", dir, "--force")
			var out bytes.Buffer
			restore.Stdout, restore.Stderr = &out, &out
			if err := restore.Start(); err != nil {
				t.Fatal(err)
			}
			select {
			case <-seen:
				restore.Process.Signal(syscall.SIGKILL)
			case <-time.After(30 * time.Second):
				restore.Process.Kill()
				t.Fatalf("restore never made %s*: %s", tc.at, out.String())
			}
			err := restore.Wait()
			ws, _ := restore.ProcessState.Sys().(syscall.WaitStatus)
			if !ws.Signaled() {
				t.Fatalf("restore ended before the kill (%v): %s", err, out.String())
			}
			in, err := backup.Inspect(dir)
			if err != nil || in == nil {
				t.Fatalf("after the kill: %+v, %v", in, err)
			}
			t.Logf("killed in state %s", in.State)

			serve := gardendCmd(bin, "serve", "--data", dir, "--addr", "127.0.0.1:0", "--log-format", "json")
			// A serve that starts (as before the fix) is stopped, and fails the test.
			timer := time.AfterFunc(10*time.Second, func() { serve.Process.Kill() })
			msg, err := serve.CombinedOutput()
			timer.Stop()
			// Every state offers the way out it has: --rollback until the old data is
			// being deleted, --resume once the archive is unpacked.
			if err == nil || !strings.Contains(string(msg), "gardend restore --") ||
				in.State != backup.Deleting && !strings.Contains(string(msg), "gardend restore --rollback --data "+dir) ||
				in.State != backup.Unpacking && !strings.Contains(string(msg), "gardend restore --resume --data "+dir) {
				t.Fatalf("serve on the directory a restore killed in state %s left: %v\n%s", in.State, err, msg)
			}
			// Until it is being deleted, the old data is in place or in the restore's
			// own directories (moved aside).
			imageRel := strings.TrimPrefix(oldImage, dir+"/")
			if in.State != backup.Deleting && !existsUnder(dir, imageRel, in.Names) {
				t.Fatalf("the old garden's image went in state %s (%v)", in.State, in.Names)
			}
			// Deleting: the backup's data stays whichever way (see backup.Rollback).
			rolledBack, rolledBackImage := "old", true
			if in.State == backup.Deleting {
				rolledBack, rolledBackImage = "root", false
			}

			undone := filepath.Join(t.TempDir(), "undone")
			if err := os.CopyFS(undone, os.DirFS(dir)); err != nil {
				t.Fatal(err)
			}
			if msg, err := gardendCmd(bin, "restore", "--rollback", "--data", undone).CombinedOutput(); err != nil {
				t.Fatalf("--rollback: %v\n%s", err, msg)
			}
			if users, err := gardendCmd(bin, "inspect", "users", "--data", undone).CombinedOutput(); err != nil || !bytes.Contains(users, []byte(rolledBack)) {
				t.Fatalf("after --rollback from state %s: %v, want user %s\n%s", in.State, err, rolledBack, users)
			}
			if _, err := os.Stat(filepath.Join(undone, filepath.FromSlash(imageRel))); (err == nil) != rolledBackImage {
				t.Fatalf("after --rollback from state %s the old image is there: %v, want %v", in.State, err == nil, rolledBackImage)
			}

			msg, err = gardendCmd(bin, "restore", "--resume", "--data", dir).CombinedOutput()
			if in.State == backup.Unpacking {
				if err == nil || !strings.Contains(string(msg), "--rollback") {
					t.Fatalf("--resume while unpacking: %v\n%s", err, msg)
				}
				return
			}
			if err != nil {
				t.Fatalf("--resume: %v\n%s", err, msg)
			}
			checkStandIns(t, dir)
			if users, err := gardendCmd(bin, "inspect", "users", "--data", dir).CombinedOutput(); err != nil || !bytes.Contains(users, []byte("root")) {
				t.Fatalf("after --resume: %v\n%s", err, users)
			}
			if _, err := os.Stat(filepath.Join(dir, "gardend.db")); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dir, operatorFile(0))); tc.extra > 0 && !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the old data was not replaced: %v", err)
			}
		})
	}
}

// operatorFile names an operator's i-th file in the data directory; "a-" sorts it
// before gardend.db and images/, so a restore moves these aside first.
func operatorFile(i int) string { return fmt.Sprintf("a-operator-%04d.txt", i) }

// existsUnder reports whether rel exists in dir or in one of the restore's entries
// of dir (names).
func existsUnder(dir, rel string, names []string) bool {
	for _, base := range append([]string{""}, names...) {
		if _, err := os.Stat(filepath.Join(dir, base, filepath.FromSlash(rel))); err == nil {
			return true
		}
	}
	return false
}

package cli_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/gardend/gardend/imagestore"
	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/server/backup"
	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/bolt"
)

// gardenWithImage makes a data directory whose database has a garden pointing at an
// image file: what an unguarded start-up sweep deletes when it runs against another
// database. It returns the image's path relative to dir.
func gardenWithImage(t *testing.T, dir string) string {
	t.Helper()
	st, err := bolt.Open(filepath.Join(dir, bolt.FileName), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	u, err := st.CreateUser(store.NewUser{Username: "old", FirstName: "O", LastName: "D", PasswordHash: "not-a-hash"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := st.CreateCompany(u.ID, "Old farm")
	if err != nil {
		t.Fatal(err)
	}
	g, err := st.CreateGarden(c.ID, "Old garden")
	if err != nil {
		t.Fatal(err)
	}
	images, err := imagestore.Open(filepath.Join(dir, server.ImageDirName))
	if err != nil {
		t.Fatal(err)
	}
	rel, err := images.Put([]byte("\x89PNG\r\n\x1a\nthe old garden's photo"))
	if err != nil {
		t.Fatal(err)
	}
	cs := store.Coordinates{
		{Name: "top_left", Latitude: 52.2, Longitude: 8.1},
		{Name: "top_right", Latitude: 52.2, Longitude: 8.3},
		{Name: "bottom_left", Latitude: 52.1, Longitude: 8.1},
	}
	if _, err := st.SetGardenImage(g.ID, rel, cs); err != nil {
		t.Fatal(err)
	}
	return rel
}

// errKilled stands for SIGKILL: the fault hook panics with it, so nothing restore
// would do on an error runs.
var errKilled = errors.New("killed")

// killedRestore restores archive into dir and kills it before its step k; it reports
// whether the kill happened (k beyond the last step lets the restore finish).
func killedRestore(t *testing.T, archive []byte, dir string, k int) (killed bool) {
	t.Helper()
	n := 0
	defer func() {
		if p := recover(); p != nil {
			if p != errKilled {
				panic(p)
			}
			killed = true
		}
	}()
	_, err := backup.Restore(bytes.NewReader(archive), dir, backup.RestoreOptions{
		Force: true,
		// The real database check is run by the restore command; here any will do.
		CheckDB: func(string, *backup.Manifest) error { return nil },
		Fault: func(string) error {
			if n == k {
				panic(errKilled)
			}
			n++
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return false
}

func newServer(dir string) (*server.Server, error) {
	return newServerIn(server.Config{
		DataDir: dir, Addr: "127.0.0.1:0", Logger: zerolog.Nop(),
		Argon2: store.Argon2Params{Time: 1, Memory: 64, Threads: 1, KeyLen: 32},
	})
}

// The scenario at every step of a restore: killed there, then started as
// systemd would. serve must refuse (naming the way out) instead of opening an empty
// database whose start-up sweep deletes the old garden's image; --rollback must give
// back the old data with its image, --resume the backup's.
func TestServeAfterARestoreKilledAtEveryStep(t *testing.T) {
	archive, _ := realArchive(t)
	for k := 0; ; k++ {
		dir := t.TempDir()
		oldImage := gardenWithImage(t, dir)
		if !killedRestore(t, archive, dir, k) {
			if k < 10 {
				t.Fatalf("restore has only %d steps", k)
			}
			break
		}
		t.Run(fmt.Sprint("step ", k), func(t *testing.T) {
			in, err := backup.Inspect(dir)
			if err != nil {
				t.Fatal(err)
			}
			if in == nil {
				if k != 0 {
					t.Fatal("the restore left nothing")
				}
				return
			}
			srv, err := newServer(dir)
			if err == nil {
				srv.Close()
				t.Fatalf("serve started on a directory in state %s", in.State)
			}
			if !errors.Is(err, backup.ErrInterrupted) || !strings.Contains(err.Error(), "gardend restore --") {
				t.Fatalf("serve: %v", err)
			}

			undone := filepath.Join(t.TempDir(), "undone")
			if err := os.CopyFS(undone, os.DirFS(dir)); err != nil {
				t.Fatal(err)
			}
			out, err := run(t, "", "restore", "--rollback", "--data", undone)
			if err != nil || !strings.Contains(out, "undone") {
				t.Fatalf("--rollback: %q, %v", out, err)
			}
			srv, err = newServer(undone)
			if err != nil {
				t.Fatalf("serve after --rollback: %v", err)
			}
			srv.Close()
			if in.State == backup.Deleting {
				checkStandIns(t, undone) // the restore had gone through
			} else if _, err := os.Stat(filepath.Join(undone, filepath.FromSlash(oldImage))); err != nil {
				t.Fatalf("the old garden's image is gone after --rollback: %v", err)
			}

			out, err = run(t, "", "restore", "--resume", "--data", dir)
			if in.State == backup.Unpacking {
				if !errors.Is(err, backup.ErrCannotResume) {
					t.Fatalf("--resume while unpacking: %q, %v", out, err)
				}
				return
			}
			if err != nil || !strings.Contains(out, dir) {
				t.Fatalf("--resume: %q, %v", out, err)
			}
			srv, err = newServer(dir)
			if err != nil {
				t.Fatalf("serve after --resume: %v", err)
			}
			srv.Close()
			checkStandIns(t, dir)
		})
	}
}

// Every command that opens the data directory refuses while a restore is pending,
// and says how to finish or undo it.
func TestCommandsRefuseAHalfRestoredDirectory(t *testing.T) {
	archive, _ := realArchive(t)
	dir := t.TempDir()
	gardenWithImage(t, dir)
	// Killed while the old data was moved aside: gardend.db went first.
	if !killedRestore(t, archive, dir, 4) {
		t.Fatal("not killed")
	}
	if in, _ := backup.Inspect(dir); in == nil || in.State != backup.MovingAside {
		t.Fatalf("state %+v", in)
	}
	if _, err := os.Stat(filepath.Join(dir, bolt.FileName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the database was not moved aside: %v", err)
	}
	for _, args := range [][]string{
		{"serve", "--addr", "127.0.0.1:0"},
		{"inspect", "users"},
		{"inspect", "stats"},
		{"backup", filepath.Join(t.TempDir(), "b.tar")},
		{"admin", "create", "--username", "root", "--first-name", "R", "--last-name", "T", "--password-stdin"},
		{"user", "create", "--username", "ann", "--first-name", "A", "--last-name", "N", "--password-stdin"},
		{"beds", "add", "--garden", "1", "--uuid", "3fa85f64-5717-4562-b3fc-2c963f66afa6"},
		{"pointclouds", "sync", "--spatial", "127.0.0.1:1"},
		{"restore", filepath.Join(t.TempDir(), "any.tar"), "--force"},
	} {
		_, err := run(t, "a-long-password-123\n", append(args, "--data", dir)...)
		if !errors.Is(err, backup.ErrInterrupted) || !strings.Contains(err.Error(), "gardend restore --resume --data "+dir) ||
			!strings.Contains(err.Error(), "gardend restore --rollback --data "+dir) {
			t.Errorf("%s: got %v", strings.Join(args, " "), err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, bolt.FileName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a command created a database in the half-restored directory: %v", err)
	}
}

// startAndSweep starts (and closes) a server on dir, returning its log.
func startAndSweep(t *testing.T, dir string) string {
	t.Helper()
	var logs bytes.Buffer
	srv, err := newServerIn(server.Config{DataDir: dir, Addr: "127.0.0.1:0", Logger: zerolog.New(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	return logs.String()
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Stat(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

// The start-up sweep deletes a file no record refers to only when the files are the
// open database's own: never those beside a database made just now (the issue's
// interrupted restore, a database moved away), not on the next start either, and
// not those another database claims.
func TestStartUpSweepSparesAnotherDatabasesFiles(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, filepath.FromSlash(gardenWithImage(t, dir)))
	// A data directory from before .gardend-id: the database is given its id and
	// claims the files; nothing is unreferenced yet.
	startAndSweep(t, dir)
	if !exists(t, img) || !exists(t, filepath.Join(dir, server.DataIDFile)) {
		t.Fatal("first start: image gone or no id file written")
	}
	claimed, _ := os.ReadFile(filepath.Join(dir, server.DataIDFile))

	// The database goes; a new one is made at the next start, and at the one after.
	moved := filepath.Join(t.TempDir(), "elsewhere.db")
	if err := os.Rename(filepath.Join(dir, bolt.FileName), moved); err != nil {
		t.Fatal(err)
	}
	if logs := startAndSweep(t, dir); !exists(t, img) || !strings.Contains(logs, "another database's") {
		t.Fatalf("beside a new database the image went or no warning: %s", logs)
	}
	os.Remove(filepath.Join(dir, server.DataIDFile))
	if logs := startAndSweep(t, dir); !exists(t, img) || !strings.Contains(logs, "leaves every image and point-cloud file alone") {
		t.Fatalf("beside a new database without an id file: %s", logs)
	}
	if logs := startAndSweep(t, dir); !exists(t, img) || !strings.Contains(logs, "never claimed the files") {
		t.Fatalf("second start beside the new database: %s", logs)
	}

	// The old database comes back: its id file with it, and its image is still there.
	if err := os.Rename(moved, filepath.Join(dir, bolt.FileName)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, server.DataIDFile), claimed, 0o600); err != nil {
		t.Fatal(err)
	}
	startAndSweep(t, dir)
	if !exists(t, img) {
		t.Fatal("the old database's image is gone")
	}

	// Its own file that no record refers to (a crash's leftover) is swept as before.
	orphan := filepath.Join(dir, server.ImageDirName, "0123456789abcdef0123456789abcdef.png")
	if err := os.WriteFile(orphan, []byte("\x89PNG\r\n\x1a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if startAndSweep(t, dir); exists(t, orphan) || !exists(t, img) {
		t.Fatalf("sweep of its own files: orphan left %v, image kept %v", exists(t, orphan), exists(t, img))
	}
}

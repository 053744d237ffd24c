package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/server/backup"
	"github.com/gardend/gardend/server/pointcloud"
	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/bolt"
)

type restoreOptions struct {
	global   *globalOptions
	force    bool
	resume   bool
	rollback bool
}

func newRestoreCommand(g *globalOptions) *cobra.Command {
	o := &restoreOptions{global: g}
	cmd := &cobra.Command{
		Use:   "restore {FILE | --resume | --rollback} --data DIR",
		Short: "Replace a data directory with the contents of a backup archive",
		Long: `Restore a backup written by gardend backup (or GET /admin/backup) from FILE ("-" for
standard input) into the data directory DIR. Stop gardend serve on DIR first: restore
refuses a directory whose database a server holds.

DIR must be empty or missing unless --force is given. Before anything in DIR changes,
the whole archive is unpacked into DIR/.restore-tmp-X and checked: the manifest, every
entry's size and SHA-256, safe paths, and the database's consistency and schema
version (not newer than this gardend). Only then are DIR's old contents moved aside,
the new ones moved in and synced, and the old ones deleted. A failure while they move
puts the old contents back.

With --store postgres://… the target is that database instead: the archive (of either
store) is unpacked and checked in a scratch directory (inside --data when given, which
then also receives the point-cloud cache), and the records and image content are loaded
in one transaction. The database must be empty unless --force, which replaces what it
holds in the same transaction. Nodes may keep running; nothing needs --resume.

` + backup.RecoveryHelp,
		Example: `  gardend restore /mnt/usb/gardend-20261122T080000Z.tar --data /var/lib/gardend --force
  ssh backup-host 'cat gardend.tar' | gardend restore - --data /var/lib/gardend
  gardend restore --resume --data /var/lib/gardend     # after a power cut during a restore
  # a box's install into a cluster:
  gardend restore box.tar --store "$GARDEND_STORE" --data /var/lib/gardend-node`,
		Args: o.args,
		RunE: o.run,
	}
	f := cmd.Flags()
	f.BoolVar(&o.force, "force", false, "replace the contents of a data directory that is not empty")
	f.BoolVar(&o.resume, "resume", false, "finish a restore that was cut off (the data directory ends up with the backup's data)")
	f.BoolVar(&o.rollback, "rollback", false, "undo a restore that was cut off (the data directory ends up with the data from before)")
	cmd.MarkFlagsMutuallyExclusive("resume", "rollback")
	cmd.MarkFlagsMutuallyExclusive("resume", "force")
	cmd.MarkFlagsMutuallyExclusive("rollback", "force")
	return cmd
}

// args takes FILE, or nothing with --resume or --rollback.
func (o *restoreOptions) args(cmd *cobra.Command, args []string) error {
	if o.resume || o.rollback {
		if len(args) > 0 {
			return errors.New("--resume and --rollback take no FILE: they go on from what the cut-off restore left in --data DIR")
		}
		return nil
	}
	if len(args) != 1 {
		return errors.New("restore needs one FILE (\"-\" for standard input), or --resume or --rollback to deal with a restore that was cut off")
	}
	return nil
}

func (o *restoreOptions) run(cmd *cobra.Command, args []string) error {
	if err := o.global.checkStore(); err != nil {
		return err
	}
	if _, pg := o.global.postgresDSN(); pg {
		if o.resume || o.rollback {
			return errors.New("--resume and --rollback finish or undo a restore into a data directory; a restore into PostgreSQL is one transaction, which a cut-off run leaves undone: run it again")
		}
		return o.restorePostgres(cmd, args[0])
	}
	if !cmd.Flags().Changed("data") {
		return errors.New("restore needs the target directory: pass --data DIR (or set GARDEND_DATA)")
	}
	dir := o.global.dataDir
	if err := checkNotServing(dir); err != nil {
		return err
	}
	if o.resume || o.rollback {
		return o.recover(cmd, dir)
	}
	// Said before the archive is read; Restore checks again under its lock.
	if err := backup.CheckIdle(dir); err != nil {
		return err
	}
	in, closeIn, err := openArchive(cmd, args[0])
	if err != nil {
		return err
	}
	defer closeIn()
	m, err := backup.Restore(in, dir, backup.RestoreOptions{
		Force: o.force,
		Prepare: func(staging string, m *backup.Manifest) (string, error) {
			return recordsToBolt(cmd.Context(), staging, m, reportRepair(cmd))
		},
		CheckDB: checkRestoredDB,
		// A server started while the archive was unpacked must not see the switch.
		BeforeSwitch: func() error { return checkNotServing(dir) },
	})
	if err != nil {
		return err
	}
	printRestored(cmd, m, args[0], dir)
	return nil
}

// printRestored reports a restore of the archive named file into target. The restore
// is done: a failure to print the report does not undo it.
func printRestored(cmd *cobra.Command, m *backup.Manifest, file, target string) {
	out := cmd.OutOrStdout()
	for _, x := range m.Missing {
		_, _ = fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s was missing when the backup was made (%s)\n", printable(x.Path), printable(x.Reason))
	}
	_, _ = fmt.Fprintf(out, "restored %s into %s: %s of data (%s)\n", printable(file), printable(target), formatSize(m.TotalBytes()), describeEntries(m))
	_, _ = fmt.Fprintf(out, "backup made %s by gardend %s, schema %d\n", m.Created.Format(time.RFC3339), printable(m.GardendVersion), m.SchemaVersion)
}

// reportRepair warns of each record a restore repaired to load it (store.Repair):
// names with control characters or invalid UTF-8, which no store keeps, are loaded
// with U+FFFD in their place rather than refused.
func reportRepair(cmd *cobra.Command) func(store.Repair) {
	return func(r store.Repair) {
		_, _ = fmt.Fprintf(cmd.ErrOrStderr(), "warning: repaired %s\n", printable(r.String()))
	}
}

// openArchive opens the archive file, or standard input for "-".
func openArchive(cmd *cobra.Command, file string) (io.Reader, func(), error) {
	if file == "-" {
		return cmd.InOrStdin(), func() {}, nil
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, nil, fmt.Errorf("restore: %w", err)
	}
	return f, func() { _ = f.Close() }, nil // read only
}

// recover finishes or undoes a restore that was cut off in dir.
func (o *restoreOptions) recover(cmd *cobra.Command, dir string) error {
	op, verb := backup.Resume, "finished"
	if o.rollback {
		op, verb = backup.Rollback, "rolled back"
	}
	in, err := op(dir, backup.RecoverOptions{BeforeChange: func() error { return checkNotServing(dir) }})
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	switch {
	case in == nil:
		_, err = fmt.Fprintf(out, "no restore to finish or undo in %s\n", dir)
	case in.State == backup.Deleting:
		_, err = fmt.Fprintf(out, "the restore %s in %s had gone through; deleted the copy it had given up\n", in.ID, dir)
	case o.rollback:
		_, err = fmt.Fprintf(out, "%s the restore %s (it was %s): %s holds the data from before it\n", verb, in.ID, in.State, dir)
	default:
		_, err = fmt.Fprintf(out, "%s the restore %s (it was %s): %s holds the backup's data\n", verb, in.ID, in.State, dir)
	}
	return err
}

// checkNotServing fails when a process holds dir's database. Any other open error
// (no database yet, a damaged file about to be replaced) is no reason to stop.
func checkNotServing(dir string) error {
	path := filepath.Join(dir, bolt.FileName)
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	st, err := bolt.Open(path, bolt.Options{ReadOnly: true, Timeout: 300 * time.Millisecond})
	if errors.Is(err, store.ErrLocked) {
		return fmt.Errorf("restore: %w: stop gardend serve on %s first", err, dir)
	}
	if err == nil {
		_ = st.Close() // read only
	}
	return nil
}

// checkRestoredDB opens the unpacked database read-only and runs bbolt's consistency
// check; a damaged file can make bbolt panic, which is caught as damage too. A
// database converted from a records archive (recordsToBolt) has this build's schema.
func checkRestoredDB(path string, m *backup.Manifest) (err error) {
	if err := checkSchema(m); err != nil {
		return err
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", backup.ErrBadDatabase, p)
		}
	}()
	st, err := bolt.Open(path, bolt.Options{ReadOnly: true, Timeout: bolt.DefaultOpenTimeout})
	if err != nil {
		return fmt.Errorf("%w: it does not open: %v", backup.ErrBadDatabase, err)
	}
	defer func() { _ = st.Close() }() // read only
	if err := st.Check(); err != nil {
		return fmt.Errorf("%w: consistency check: %v", backup.ErrBadDatabase, err)
	}
	stats, err := st.Stats()
	if err != nil {
		return fmt.Errorf("%w: %v", backup.ErrBadDatabase, err)
	}
	switch {
	case stats.SchemaVersion > bolt.SchemaVersion():
		return fmt.Errorf("%w: its database has schema version %d, this gardend knows up to %d: use a newer gardend", backup.ErrNewer, stats.SchemaVersion, bolt.SchemaVersion())
	case !m.RecordsArchive() && stats.SchemaVersion != m.SchemaVersion:
		return fmt.Errorf("%w: schema version %d, the manifest says %d", backup.ErrBadDatabase, stats.SchemaVersion, m.SchemaVersion)
	}
	return nil
}

// checkSchema refuses a backup whose database this build cannot read: a bbolt file of a
// newer schema, or records in a newer archive format.
func checkSchema(m *backup.Manifest) error {
	what, known := "schema version", bolt.SchemaVersion()
	if m.RecordsArchive() {
		what, known = "records in archive format", store.ArchiveFormat
	}
	if m.SchemaVersion > uint64(known) {
		return fmt.Errorf("%w: its database has %s %d, this gardend knows up to %d: use a newer gardend", backup.ErrNewer, what, m.SchemaVersion, known)
	}
	return nil
}

// recordsToBolt turns the records archive of a backup of a shared database (see
// server.RecordsName) into the bbolt file of the data directory being restored: it
// loads them into a new database file beside them in staging and deletes the archive.
// The image content came as files under images/, where bbolt keeps it. A backup of a
// bbolt database needs nothing done.
func recordsToBolt(ctx context.Context, staging string, m *backup.Manifest, repaired func(store.Repair)) (string, error) {
	records := filepath.Join(staging, filepath.FromSlash(m.Database))
	if !m.RecordsArchive() {
		return records, nil
	}
	if err := checkSchema(m); err != nil {
		return "", err
	}
	db := filepath.Join(staging, bolt.FileName)
	if _, err := os.Stat(db); err == nil {
		return "", fmt.Errorf("%w: it holds both records and a %s", backup.ErrFormat, bolt.FileName)
	}
	f, err := os.Open(records)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }() // read only
	st, err := bolt.Open(db, bolt.Options{})
	if err != nil {
		return "", err
	}
	err = st.Import(ctx, f, store.ImportOptions{Repaired: repaired})
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("%w: its records do not load: %v", backup.ErrBadDatabase, err)
	}
	return db, os.Remove(records)
}

// restorePostgres restores an archive into the PostgreSQL database of --store: it
// unpacks and verifies the whole archive into a scratch directory first (inside --data
// when given, else in the system's temporary directory), then loads the records and
// the image content in one transaction (store.Archiver.Import), so a failure or a
// cut-off run changes nothing. A backup of a bbolt install is read from its database
// file. The point-cloud cache goes into --data when given; any node refills what it
// lacks from the spatial server.
func (o *restoreOptions) restorePostgres(cmd *cobra.Command, file string) (err error) {
	ctx := cmd.Context()
	in, closeIn, err := openArchive(cmd, file)
	if err != nil {
		return err
	}
	defer closeIn()
	cacheDir := ""
	if cmd.Flags().Changed("data") {
		cacheDir = o.global.dataDir
		if err := os.MkdirAll(cacheDir, 0o700); err != nil {
			return fmt.Errorf("restore: %w", err)
		}
	}
	scratch, err := os.MkdirTemp(cacheDir, ".tmp-restore-")
	if err != nil {
		return fmt.Errorf("restore: scratch directory: %w", err)
	}
	defer func() { _ = os.RemoveAll(scratch) }() // a leftover .tmp- directory is left out of backups
	m, err := backup.Extract(in, scratch, backup.ReadOptions{})
	if err != nil {
		return err
	}
	if err := checkSchema(m); err != nil {
		return err
	}
	records, closeRecords, err := recordsOf(ctx, scratch, m)
	if err != nil {
		return err
	}
	defer closeRecords()
	st, _, err := openStore(ctx, o.global, nil, nil)
	if err != nil {
		return err
	}
	defer closeInto(&err, "the database", st.Close)
	err = st.Import(ctx, records, store.ImportOptions{Replace: o.force, Repaired: reportRepair(cmd), Images: func(path string) (io.ReadCloser, error) {
		if err := backup.CheckPath(path); err != nil {
			return nil, err
		}
		return os.Open(filepath.Join(scratch, filepath.FromSlash(path)))
	}})
	if errors.Is(err, store.ErrConflict) && !o.force {
		return fmt.Errorf("%w; pass --force to replace everything in it", err)
	}
	if err != nil {
		return fmt.Errorf("restore into %s: %w", o.global.describeStore(), err)
	}
	if cacheDir != "" {
		if err := adoptCache(scratch, cacheDir); err != nil {
			_, _ = fmt.Fprintf(cmd.ErrOrStderr(), "warning: the point-cloud cache was not restored into %s (nodes fetch the clouds again): %v\n", printable(cacheDir), err)
		}
	} else {
		_, _ = fmt.Fprintln(cmd.ErrOrStderr(), "note: the point-cloud cache was left out (pass --data to restore it into a node's data directory); nodes fetch the clouds again")
	}
	printRestored(cmd, m, file, o.global.describeStore())
	return nil
}

// recordsOf reads the records of an unpacked backup: its records archive, or an
// export of its bbolt database (checked first), streamed as it is read.
func recordsOf(ctx context.Context, scratch string, m *backup.Manifest) (io.Reader, func(), error) {
	path := filepath.Join(scratch, filepath.FromSlash(m.Database))
	if m.RecordsArchive() {
		f, err := os.Open(path)
		if err != nil {
			return nil, nil, err
		}
		return f, func() { _ = f.Close() }, nil // read only
	}
	if err := checkRestoredDB(path, m); err != nil {
		return nil, nil, err
	}
	st, err := bolt.Open(path, bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: it does not open: %v", backup.ErrBadDatabase, err)
	}
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		pw.CloseWithError(st.Export(ctx, pw))
	}()
	return pr, func() {
		pr.CloseWithError(errors.New("restore ended"))
		<-done
		_ = st.Close() // read only
	}, nil
}

// adoptCache moves the unpacked point-cloud files and the data directory's identity
// into the node's data directory, keeping files it has already.
func adoptCache(scratch, dataDir string) error {
	from := filepath.Join(scratch, pointcloud.DirName)
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && path == from {
			return fs.SkipAll
		}
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(scratch, path)
		if err != nil {
			return err
		}
		dst := filepath.Join(dataDir, rel)
		if _, err := os.Stat(dst); err == nil {
			return nil
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return err
		}
		return os.Rename(path, dst)
	})
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(scratch, server.DataIDFile)); err == nil {
		return os.Rename(filepath.Join(scratch, server.DataIDFile), filepath.Join(dataDir, server.DataIDFile))
	}
	return nil
}

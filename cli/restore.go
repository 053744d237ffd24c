package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/gardend/gardend/server/backup"
	"github.com/gardend/gardend/store"
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

` + backup.RecoveryHelp,
		Example: `  gardend restore /mnt/usb/gardend-20261122T080000Z.tar --data /var/lib/gardend --force
  ssh backup-host 'cat gardend.tar' | gardend restore - --data /var/lib/gardend
  gardend restore --resume --data /var/lib/gardend     # after a power cut during a restore`,
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
	var in io.Reader = cmd.InOrStdin()
	if args[0] != "-" {
		f, err := os.Open(args[0])
		if err != nil {
			return fmt.Errorf("restore: %w", err)
		}
		defer f.Close()
		in = f
	}
	m, err := backup.Restore(in, dir, backup.RestoreOptions{
		Force:   o.force,
		CheckDB: checkRestoredDB,
		// A server started while the archive was unpacked must not see the switch.
		BeforeSwitch: func() error { return checkNotServing(dir) },
	})
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	for _, x := range m.Missing {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s was missing when the backup was made (%s)\n", printable(x.Path), printable(x.Reason))
	}
	fmt.Fprintf(out, "restored %s into %s: %s (%s)\n", args[0], dir, formatSize(m.TotalBytes()), describeEntries(m))
	fmt.Fprintf(out, "backup made %s by gardend %s, schema %d\n", m.Created.Format(time.RFC3339), printable(m.GardendVersion), m.SchemaVersion)
	return nil
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
		fmt.Fprintf(out, "no restore to finish or undo in %s\n", dir)
	case in.State == backup.Deleting:
		fmt.Fprintf(out, "the restore %s in %s had gone through; deleted the copy it had given up\n", in.ID, dir)
	case o.rollback:
		fmt.Fprintf(out, "%s the restore %s (it was %s): %s holds the data from before it\n", verb, in.ID, in.State, dir)
	default:
		fmt.Fprintf(out, "%s the restore %s (it was %s): %s holds the backup's data\n", verb, in.ID, in.State, dir)
	}
	return nil
}

// checkNotServing fails when a process holds dir's database. Any other open error
// (no database yet, a damaged file about to be replaced) is no reason to stop.
func checkNotServing(dir string) error {
	path := filepath.Join(dir, store.FileName)
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	st, err := store.Open(path, store.Options{ReadOnly: true, Timeout: 300 * time.Millisecond})
	if errors.Is(err, store.ErrLocked) {
		return fmt.Errorf("restore: %w: stop gardend serve on %s first", err, dir)
	}
	if err == nil {
		st.Close()
	}
	return nil
}

// checkRestoredDB opens the unpacked database read-only and runs bbolt's consistency
// check; a damaged file can make bbolt panic, which is caught as damage too.
func checkRestoredDB(path string, m *backup.Manifest) (err error) {
	if m.SchemaVersion > store.SchemaVersion() {
		return fmt.Errorf("%w: its database has schema version %d, this gardend knows up to %d: use a newer gardend", backup.ErrNewer, m.SchemaVersion, store.SchemaVersion())
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", backup.ErrBadDatabase, p)
		}
	}()
	st, err := store.Open(path, store.Options{ReadOnly: true, Timeout: store.DefaultOpenTimeout})
	if err != nil {
		return fmt.Errorf("%w: it does not open: %v", backup.ErrBadDatabase, err)
	}
	defer st.Close()
	if err := st.Check(); err != nil {
		return fmt.Errorf("%w: consistency check: %v", backup.ErrBadDatabase, err)
	}
	stats, err := st.Stats()
	if err != nil {
		return fmt.Errorf("%w: %v", backup.ErrBadDatabase, err)
	}
	switch {
	case stats.SchemaVersion > store.SchemaVersion():
		return fmt.Errorf("%w: its database has schema version %d, this gardend knows up to %d: use a newer gardend", backup.ErrNewer, stats.SchemaVersion, store.SchemaVersion())
	case stats.SchemaVersion != m.SchemaVersion:
		return fmt.Errorf("%w: schema version %d, the manifest says %d", backup.ErrBadDatabase, stats.SchemaVersion, m.SchemaVersion)
	}
	return nil
}

package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/server/atomicfile"
	"github.com/gardend/gardend/server/backup"
)

type backupOptions struct {
	global *globalOptions
}

func newBackupCommand(g *globalOptions) *cobra.Command {
	o := &backupOptions{global: g}
	return &cobra.Command{
		Use:   "backup FILE",
		Short: "Write the database and all files of the data directory to one archive",
		Long: `Write a backup of the data directory to FILE ("-" for standard output): a
consistent snapshot of the database, every file under images/ and pointclouds/ (and
any other file in the data directory), and a manifest with every entry's size and
SHA-256. The archive is a plain tar; restore it with gardend restore.

Works whether or not gardend serve is running: while it runs, the snapshot is taken
through its admin socket without stopping it; otherwise in this process. The archive
is checked as it is written, goes to FILE.tmp, is synced and only then renamed to
FILE, so FILE never holds a partial backup. It is created with mode 0600: it holds
password hashes.

Files deleted while the backup runs are listed in the manifest as missing and
reported here; they do not fail the backup.

With --store postgres://… the archive holds every record of the database (one
consistent snapshot, as JSON lines), the content of every garden image beside it, and
this node's point-cloud cache from --data; nodes keep serving meanwhile. Either kind of
archive restores into either store.`,
		Example: `  gardend backup --data /var/lib/gardend /mnt/usb/gardend-$(date -u +%Y%m%dT%H%M%SZ).tar
  gardend backup - | ssh backup-host 'cat > gardend.tar'`,
		Args: cobra.ExactArgs(1),
		RunE: o.run,
	}
}

func (o *backupOptions) run(cmd *cobra.Command, args []string) error {
	if err := requireDatabase(o.global); err != nil {
		return err
	}
	target := args[0]
	report := cmd.OutOrStdout()
	if target == "-" {
		if f, ok := cmd.OutOrStdout().(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			return errors.New("standard output is a terminal: redirect it (gardend backup - > FILE) or pipe it")
		}
		// Standard output carries the archive; the summary goes to standard error.
		report = cmd.ErrOrStderr()
		m, n, err := o.write(cmd, cmd.OutOrStdout())
		if err != nil {
			return err
		}
		printBackupSummary(report, cmd.ErrOrStderr(), "standard output", m, n)
		return nil
	}
	// A fixed temporary name: truncating a stale FILE.tmp (left by a power cut) keeps
	// unattended runs going.
	f, err := atomicfile.Create(target, atomicfile.Options{Temp: target + ".tmp"})
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	m, n, err := o.write(cmd, f)
	if err == nil {
		err = f.Commit()
	} else {
		f.Abort()
	}
	if err != nil {
		return fmt.Errorf("backup to %s failed (nothing was written there): %w", target, err)
	}
	printBackupSummary(report, cmd.ErrOrStderr(), target, m, n)
	return nil
}

// write streams the archive into out while verifying it in parallel, so a backup
// that reports success has been read back entry by entry against its manifest.
func (o *backupOptions) write(cmd *cobra.Command, out io.Writer) (*backup.Manifest, int64, error) {
	pr, pw := io.Pipe()
	type verdict struct {
		m   *backup.Manifest
		err error
	}
	done := make(chan verdict, 1)
	go func() {
		m, err := backup.Verify(pr, backup.ReadOptions{})
		if err != nil {
			pr.CloseWithError(err) // stops the stream: no point finishing a bad archive
		} else {
			_, _ = io.Copy(io.Discard, pr) // the tar trailer; a broken stream is adminDownload's error
		}
		done <- verdict{m, err}
	}()
	cw := &byteCounter{w: out}
	err := adminDownload(cmd.Context(), o.global, server.BackupCreate{}, io.MultiWriter(cw, pw))
	pw.CloseWithError(err)
	v := <-done
	switch {
	case err != nil && v.err != nil && !errors.Is(err, v.err):
		return nil, 0, fmt.Errorf("%w (the archive check found: %v)", err, v.err)
	case err != nil:
		return nil, 0, err
	case v.err != nil:
		return nil, 0, fmt.Errorf("the archive is damaged: %w", v.err)
	}
	return v.m, cw.n, nil
}

// printBackupSummary reports a backup already written and verified: a failure to print
// it does not make the backup fail.
func printBackupSummary(out, warn io.Writer, target string, m *backup.Manifest, archiveBytes int64) {
	for _, x := range m.Missing {
		_, _ = fmt.Fprintf(warn, "warning: %s was deleted during the backup (%s); the restored database may still refer to it\n", printable(x.Path), printable(x.Reason))
	}
	for _, x := range m.Skipped {
		_, _ = fmt.Fprintf(warn, "warning: %s left out: %s\n", printable(x.Path), printable(x.Reason))
	}
	// The archive's size, and the data it holds: the size restore reports.
	_, _ = fmt.Fprintf(out, "wrote %s: %s archive, %s of data (%s) from %s, schema %d\n", target, formatSize(archiveBytes),
		formatSize(m.TotalBytes()), describeEntries(m), m.Created.Format("2006-01-02T15:04:05Z07:00"), m.SchemaVersion)
}

// describeEntries counts the database and the files of each top-level directory.
func describeEntries(m *backup.Manifest) string {
	type group struct {
		name  string
		files int
		bytes int64
	}
	var groups []*group
	byName := map[string]*group{}
	for _, e := range m.Entries {
		name := "other files"
		if e.Path == m.Database {
			name = "database"
		} else if dir, _, ok := strings.Cut(e.Path, "/"); ok {
			name = dir + "/"
		}
		g := byName[name]
		if g == nil {
			g = &group{name: name}
			byName[name] = g
			groups = append(groups, g)
		}
		g.files++
		g.bytes += e.Size
	}
	parts := make([]string, 0, len(groups))
	for _, g := range groups {
		if g.name == "database" {
			parts = append(parts, "database "+formatSize(g.bytes))
			continue
		}
		noun := "files"
		if g.files == 1 {
			noun = "file"
		}
		// Top-level names come from the data directory or an archive.
		parts = append(parts, fmt.Sprintf("%s %d %s, %s", printable(g.name), g.files, noun, formatSize(g.bytes)))
	}
	return strings.Join(parts, "; ")
}

func formatSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for v := n / unit; v >= unit; v /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

type byteCounter struct {
	w io.Writer
	n int64
}

func (c *byteCounter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

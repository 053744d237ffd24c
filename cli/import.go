package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/gardend/gardend/imagestore"
	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/server/plantmap"
	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/bolt"
)

func newImportCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Bring data over from another system",
	}
	cmd.AddCommand(newImportPlantMapCommand(g))
	return cmd
}

type importPlantMapOptions struct {
	global *globalOptions
	media  string
	dryRun bool
}

func newImportPlantMapCommand(g *globalOptions) *cobra.Command {
	o := &importPlantMapOptions{global: g}
	cmd := &cobra.Command{
		Use:   "plantmap DUMP.json",
		Short: "Import a PlantMap (Django) server's data from a dumpdata export",
		Long: `Import the users (with their passwords), companies, gardens with their images and
coordinates, beds, permissions and widgets of a PlantMap server from the JSON file
that "python manage.py dumpdata" writes ("-" reads standard input). Everything else in
the dump (sessions, tokens, the admin log, …) is counted and left out.

The dump is checked first; any error is reported with the dump's model and pk and
nothing is written. Otherwise the new records are written in one transaction: all or
nothing. Ids are kept where gardend holds nothing of a kind yet, and mapped (the map
is printed) where it does. Running it again with the same dump changes nothing.
Garden images are read from --media by the file name their image_path ends in and
stored as PNG (a JPEG or GIF is converted, pixel for pixel). Users log in with their
old passwords; each one's hash is upgraded to argon2id at their first login.

Run it with gardend serve stopped. Guide: docs/migrating.md.`,
		Example: `  gardend import plantmap plantmap.json --media /srv/plantmap/storage/images --dry-run
  gardend import plantmap plantmap.json --media /srv/plantmap/storage/images --data /var/lib/gardend`,
		Args: cobra.ExactArgs(1),
		RunE: o.run,
	}
	f := cmd.Flags()
	f.StringVar(&o.media, "media", "", "directory holding the old server's garden images (its storage/images)")
	f.BoolVar(&o.dryRun, "dry-run", false, "check the dump and show what would be imported, without writing anything")
	return cmd
}

func (o *importPlantMapOptions) run(cmd *cobra.Command, args []string) (err error) {
	if o.media != "" {
		if st, err := os.Stat(o.media); err != nil || !st.IsDir() {
			return fmt.Errorf("--media %s: not a directory", o.media)
		}
	}
	in, size, closeDump, err := openDump(cmd, args[0])
	if err != nil {
		return err
	}
	defer closeDump()
	bar := newStageBar(cmd.ErrOrStderr())
	dump, err := plantmap.ReadDump(in, func(n int64) { bar.draw("dump", n, size) })
	bar.finish()
	if err != nil {
		return fmt.Errorf("%s: %w", args[0], err)
	}
	st, images, closeStore, err := o.openTarget(cmd.Context())
	if err != nil {
		return err
	}
	defer closeInto(&err, "the database", closeStore)

	res, err := plantmap.Import(cmd.Context(), plantmap.Options{
		Dump: dump, MediaDir: o.media, SpoolDir: spoolDir(o.global.dataDir), DryRun: o.dryRun, Store: st, Images: images, Progress: bar.draw,
	})
	bar.finish()
	if res != nil {
		if perr := printImport(cmd.OutOrStdout(), res, o.dryRun); perr != nil && err == nil {
			return fmt.Errorf("write the import report: %w", perr)
		}
	}
	switch {
	case errors.Is(err, plantmap.ErrProblems):
		n := 0
		for _, p := range res.Problems {
			if !p.Warning {
				n++
			}
		}
		return fmt.Errorf("the dump has %d error(s), listed above; nothing was imported", n)
	case err != nil:
		return fmt.Errorf("import: %w", err)
	}
	return nil
}

// spoolDir is where the import's images wait for the write: the data directory, on
// the disk they go to, when there is one (the system's temporary directory may be
// memory).
func spoolDir(dataDir string) string {
	if st, err := os.Stat(dataDir); err == nil && st.IsDir() {
		return dataDir
	}
	return ""
}

// openDump opens the dump file, or standard input for "-"; size is 0 when unknown.
func openDump(cmd *cobra.Command, path string) (io.Reader, int64, func(), error) {
	if path == "-" {
		return cmd.InOrStdin(), 0, func() {}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("open the dump: %w", err)
	}
	var size int64
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	return f, size, func() { _ = f.Close() }, nil // read only
}

// openTarget opens the database for the import. A dry run opens an existing bbolt
// database read-only and plans against an empty throwaway one where there is none, so
// it writes nothing at all; the import itself needs the bbolt file to itself (serve
// must not run). A PostgreSQL database is shared: nodes may serve it meanwhile (the
// import's transaction is SERIALIZABLE), and a dry run there only reads.
func (o *importPlantMapOptions) openTarget(ctx context.Context) (plantmap.Store, plantmap.Images, func() error, error) {
	if _, pg := o.global.postgresDSN(); pg {
		st, _, err := openStore(ctx, o.global, nil, nil)
		if err != nil {
			return nil, nil, nil, err
		}
		closeStore := st.Close
		shared, ok := st.(store.Shared)
		if !ok || o.dryRun {
			return st, nil, closeStore, nil
		}
		return st, contentImages{ctx: ctx, content: shared}, closeStore, nil
	}
	dir := o.global.dataDir
	path := o.global.boltPath()
	_, statErr := os.Stat(path)
	opts := bolt.Options{Timeout: bolt.DefaultOpenTimeout}
	if o.dryRun {
		if statErr != nil {
			tmp, err := os.MkdirTemp("", "gardend-import-dry-run-")
			if err != nil {
				return nil, nil, nil, err
			}
			st, err := bolt.Open(filepath.Join(tmp, bolt.FileName), opts)
			if err != nil {
				_ = os.RemoveAll(tmp) // err is the one to report
				return nil, nil, nil, err
			}
			return st, nil, func() error {
				_ = os.RemoveAll(tmp) // a throwaway in the temporary directory
				return st.Close()
			}, nil
		}
		opts.ReadOnly = true
	}
	st, err := bolt.Open(path, opts)
	if errors.Is(err, store.ErrLocked) {
		return nil, nil, nil, fmt.Errorf("%w: stop gardend serve on %s, import, then start it again", err, dir)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	if o.dryRun {
		return st, nil, st.Close, nil
	}
	images, err := imagestore.Open(filepath.Join(dir, server.ImageDirName))
	if err != nil {
		_ = st.Close() // nothing written yet; err is the one to report
		return nil, nil, nil, err
	}
	return st, images, st.Close, nil
}

// contentImages puts an import's images into a database that keeps image content.
type contentImages struct {
	ctx     context.Context
	content store.ImageContent
}

func (c contentImages) PutFrom(r io.Reader) (string, error) {
	rel, _, err := c.content.PutImage(c.ctx, 0, r)
	return rel, err
}

func (c contentImages) Remove(rel string) error {
	return c.content.RemoveImage(context.WithoutCancel(c.ctx), rel)
}

// printImport writes the report: problems, what happened per model, the ids that
// changed, the images converted, what the dump held besides. Everything that comes
// from the dump is escaped: it is somebody else's data on the operator's terminal.
// The report is buffered, and its one Flush returns the first failed write (a full
// disk, a closed pipe): the ids it maps are worth not losing silently.
func printImport(out io.Writer, res *plantmap.Result, dryRun bool) error {
	w := bufio.NewWriter(out)
	problems := slices.Clone(res.Problems)
	order := map[string]int{}
	for i, m := range plantmap.Models {
		order[m] = i
	}
	sort.SliceStable(problems, func(i, j int) bool {
		a, b := problems[i], problems[j]
		if a.Warning != b.Warning {
			return !a.Warning
		}
		if order[a.Model] != order[b.Model] {
			return order[a.Model] < order[b.Model]
		}
		return pkLess(a.PK, b.PK)
	})
	if len(problems) > 0 {
		_, _ = fmt.Fprintln(w, "Problems:")
		for _, p := range problems {
			sev := "error  "
			if p.Warning {
				sev = "warning"
			}
			_, _ = fmt.Fprintf(w, "  %s  %s pk=%s: %s\n", sev, printable(p.Model), printable(p.PK), printable(p.Message))
		}
		_, _ = fmt.Fprintln(w)
	}
	if res.Plan.Kinds == nil {
		return w.Flush()
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "MODEL\tIN DUMP\tNEW\tALREADY IMPORTED\tSKIPPED\tIDS")
	for _, c := range res.Counts {
		ids := "kept"
		if !c.KeepsIDs {
			ids = "mapped"
		}
		if c.Kind == store.ImportWidgets {
			ids = "-"
		}
		_, _ = fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\n", c.Model, c.InDump, c.New, c.Already, c.Skipped, ids)
		if c.Kind == store.ImportGardens {
			_, _ = fmt.Fprintf(tw, "%s\t%d\t\t\t\t(with their gardens)\n", plantmap.ModelCoordinate, res.Coordinates)
		}
	}
	_ = tw.Flush() // into w: its error is w's

	for _, c := range res.Counts {
		kp := res.Plan.Kinds[c.Kind]
		for _, key := range sortedKeys(kp.Skipped) {
			_, _ = fmt.Fprintf(w, "skipped %s pk=%d: %s\n", printable(c.Model), key, printable(kp.Skipped[key]))
		}
	}
	for _, c := range res.Counts {
		kp := res.Plan.Kinds[c.Kind]
		if c.Kind == store.ImportWidgets || kp.KeepIDs || len(kp.New) == 0 {
			continue
		}
		var pairs []string
		for _, key := range kp.New {
			pairs = append(pairs, fmt.Sprintf("%d→%d", key, kp.IDs[key]))
		}
		_, _ = fmt.Fprintf(w, "new ids of %s (dump pk→gardend id): %s\n", c.Model, strings.Join(pairs, ", "))
	}
	for _, c := range res.Conversions {
		gardens := make([]string, len(c.Gardens))
		for i, g := range c.Gardens {
			gardens[i] = strconv.FormatUint(g, 10)
		}
		_, _ = fmt.Fprintf(w, "image %s is a %s, %d×%d: converted to PNG at that size (garden %s)\n",
			printable(c.File), strings.ToUpper(c.Format), c.Width, c.Height, strings.Join(gardens, ", "))
	}
	if len(res.SkippedModels) > 0 {
		models := make([]string, 0, len(res.SkippedModels))
		for m := range res.SkippedModels {
			models = append(models, m)
		}
		sort.Strings(models)
		var parts []string
		for _, m := range models {
			parts = append(parts, fmt.Sprintf("%s %d", printable(m), res.SkippedModels[m]))
		}
		_, _ = fmt.Fprintf(w, "left out (not gardend's to keep): %s\n", strings.Join(parts, ", "))
	}
	if n := len(res.CostlyHashes); n > 0 {
		names := make([]string, n)
		for i, name := range res.CostlyHashes {
			names[i] = printable(name)
		}
		_, _ = fmt.Fprintf(w, "%d account(s) without a usable password: their PlantMap hash costs more than %d logins to check; set a password with gardend user reset-password NAME: %s\n",
			n, store.MaxHashCost, strings.Join(names, ", "))
	}
	switch {
	case res.Errors():
	case dryRun:
		_, _ = fmt.Fprintln(w, "dry run: nothing was written")
	case res.Written:
		n := 0
		for _, c := range res.Counts {
			n += c.New
		}
		_, _ = fmt.Fprintf(w, "imported %d records in one transaction\n", n)
	default:
		_, _ = fmt.Fprintln(w, "nothing new to import: everything in the dump was imported before")
	}
	return w.Flush()
}

func sortedKeys(m map[uint64]string) []uint64 {
	out := make([]uint64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// pkLess orders numeric pks by value, others as text.
func pkLess(a, b string) bool {
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	if err1 == nil && err2 == nil {
		return x < y
	}
	return a < b
}

// stageBar draws the import's progress on a terminal: `dump [#####     ] 52%  12.3 MiB`,
// redrawn in place; elsewhere it stays quiet (a log needs the report, not the bar).
type stageBar struct {
	w     io.Writer
	tty   bool
	drawn bool
	last  string
}

func newStageBar(w io.Writer) *stageBar {
	f, ok := w.(*os.File)
	return &stageBar{w: w, tty: ok && term.IsTerminal(int(f.Fd()))}
}

func (b *stageBar) draw(stage string, done, total int64) {
	if !b.tty {
		return
	}
	filled := 0
	pct := ""
	if total > 0 {
		filled = int(min(done, total) * barWidth / total)
		pct = fmt.Sprintf(" %3d%%", min(done, total)*100/total)
	}
	detail := fmt.Sprintf("%d/%d", done, total)
	if stage == "dump" {
		detail = mib(done)
	}
	text := fmt.Sprintf("%-7s [%s%s]%s  %s", stage, strings.Repeat("#", filled), strings.Repeat(" ", barWidth-filled), pct, detail)
	if text == b.last {
		return
	}
	b.last = text
	_, _ = fmt.Fprint(b.w, "\r"+text+"\x1b[K") // a bar on a terminal: nothing to do if it fails
	b.drawn = true
}

func (b *stageBar) finish() {
	if b.drawn {
		_, _ = fmt.Fprintln(b.w)
		b.drawn = false
	}
}

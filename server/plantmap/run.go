package plantmap

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"

	"github.com/gardend/gardend/store"
)

// ErrProblems: the dump has errors; the Result's Problems list them and nothing was
// written.
var ErrProblems = errors.New("the dump has errors; nothing was imported")

// Images is where the import puts garden images (imagestore.Store).
type Images interface {
	PutFrom(r io.Reader) (rel string, err error)
	Remove(rel string) error
}

// Store is what the import needs of the database (store.Store).
type Store interface {
	PlanImport(in store.Import) (store.ImportPlan, error)
	ApplyImport(in store.Import, expect store.ImportPlan, images map[uint64]string) (store.ImportPlan, error)
}

// Options of Import.
type Options struct {
	// Dump is read with ReadDump first, so a file that is no dump is refused before
	// the database is opened.
	Dump     *Dump
	MediaDir string
	// SpoolDir is where the images wait, as PNG, for the write (a directory of their
	// own is made in it and removed); "" is the system's temporary directory. Put it
	// on a disk: the images are as large as they are.
	SpoolDir string
	DryRun   bool
	Store    Store
	Images   Images
	// Progress, when set, hears how far the image stage is, in files.
	Progress func(stage string, done, total int64)
}

// Conversion is an image that was not PNG and was converted.
type Conversion struct {
	File          string
	Format        string
	Width, Height int
	Gardens       []uint64
}

// KindCount is what happened to the records of one model.
type KindCount struct {
	Model    string
	Kind     store.ImportKind
	InDump   int
	New      int
	Already  int
	Skipped  int
	KeepsIDs bool
}

// Result is the outcome of an import (or of a dry run).
type Result struct {
	Problems      []Problem
	Plan          store.ImportPlan
	Counts        []KindCount
	Coordinates   int
	Conversions   []Conversion
	SkippedModels map[string]int
	// CostlyHashes are the usernames of the new users imported without a usable
	// password because their hash costs too much to check (Converted.CostlyHashes).
	CostlyHashes []string
	// Written is false for a dry run, one with errors, and one with nothing new.
	Written bool
}

// Errors reports whether any problem is an error.
func (r *Result) Errors() bool {
	return slices.ContainsFunc(r.Problems, func(p Problem) bool { return !p.Warning })
}

// kindModel names the dump model of each store kind.
var kindModel = map[store.ImportKind]string{
	store.ImportUsers: ModelUser, store.ImportCompanies: ModelCompany, store.ImportGardens: ModelGarden,
	store.ImportBeds: ModelBed, store.ImportCompanyPerms: ModelCompanyPerm, store.ImportGardenPerms: ModelGardenPerm,
	store.ImportWidgets: ModelWidget,
}

// Import checks the dump, and (unless it has errors or DryRun is set)
// writes the images of the new gardens and then every new record in one transaction.
// Images written for a transaction that then fails are removed again. A dump with
// errors returns ErrProblems with the Result holding them.
func Import(ctx context.Context, o Options) (*Result, error) {
	progress := o.Progress
	if progress == nil {
		progress = func(string, int64, int64) {}
	}
	dump := o.Dump
	conv := Convert(dump)
	res := &Result{Problems: conv.Problems, SkippedModels: dump.Skipped}
	for _, g := range conv.Import.Gardens {
		res.Coordinates += len(g.Coordinates)
	}
	plan, err := o.Store.PlanImport(conv.Import)
	if err != nil {
		return nil, err
	}
	res.Plan = plan
	for _, p := range plan.Problems {
		res.Problems = append(res.Problems, Problem{Model: kindModel[p.Kind], PK: strconv.FormatUint(p.Key, 10),
			Message: conv.coordinateNames(p), Warning: p.Warning})
	}
	res.Counts = counts(conv.Import, plan)
	for _, u := range conv.Import.Users {
		if kp := plan.Kinds[store.ImportUsers]; kp != nil && conv.CostlyHashes[u.Key] && slices.Contains(kp.New, u.Key) {
			res.CostlyHashes = append(res.CostlyHashes, u.Username)
		}
	}

	// The images of the gardens to write, each file read and converted once however
	// many gardens show it; a dry run reads them too, so its report is complete.
	media, err := OpenMedia(o.MediaDir)
	if err != nil {
		return nil, err
	}
	defer func() { _ = media.Close() }() // a directory read only
	spool := ""
	if !o.DryRun {
		// ".tmp-": backups leave it out, should the import die before removing it.
		if spool, err = os.MkdirTemp(o.SpoolDir, ".tmp-import-images-"); err != nil {
			return nil, fmt.Errorf("image spool: %w", err)
		}
		defer func() { _ = os.RemoveAll(spool) }() // best effort: backups skip .tmp- anyway
	}
	images, err := loadImages(ctx, conv, plan.NewGardensWithImage(conv.Import), media, spool, res, progress)
	if err != nil {
		return nil, err
	}
	if res.Errors() {
		return res, ErrProblems
	}
	if o.DryRun || !plan.HasNew() {
		return res, nil
	}

	written := map[uint64]string{}
	undo := func() {
		for _, rel := range written {
			_ = o.Images.Remove(rel) // unreferenced: the start-up sweep removes a leftover
		}
	}
	for _, key := range plan.NewGardensWithImage(conv.Import) {
		rel, err := putImage(o.Images, images[key].File)
		if err != nil {
			undo()
			return res, fmt.Errorf("write the image of garden %d: %w", key, err)
		}
		written[key] = rel
	}
	if _, err := o.Store.ApplyImport(conv.Import, plan, written); err != nil {
		undo()
		return res, err
	}
	res.Written = true
	return res, nil
}

// putImage stores the spooled image file.
func putImage(images Images, file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }() // read only
	return images.PutFrom(f)
}

// loadImages reads the image of each garden in keys into the spool directory as PNG
// (spool "": only checks them), reporting a file that cannot be used as an error of
// every garden that refers to it, and the conversions in res. One image at a time is
// in memory, and only a JPEG or GIF being converted (within MaxDecodeBytes).
func loadImages(ctx context.Context, conv *Converted, keys []uint64, media *Media, spool string, res *Result, progress func(string, int64, int64)) (map[uint64]Image, error) {
	var files []string
	for _, key := range keys {
		if name := conv.ImageFiles[key]; !slices.Contains(files, name) {
			files = append(files, name)
		}
	}
	loaded := map[string]Image{}
	failed := map[string]error{}
	for i, name := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		img, err := spoolImage(media, name, spool)
		var disk *spoolError
		if errors.As(err, &disk) {
			return nil, disk.err // the spool's, not the image's
		}
		if err != nil {
			failed[name] = err
		} else {
			loaded[name] = img
		}
		progress("images", int64(i+1), int64(len(files)))
	}
	images := map[uint64]Image{}
	conversions := map[string]*Conversion{}
	for _, key := range keys {
		name := conv.ImageFiles[key]
		if err := failed[name]; err != nil {
			res.Problems = append(res.Problems, Problem{Model: ModelGarden, PK: strconv.FormatUint(key, 10), Message: err.Error()})
			continue
		}
		img := loaded[name]
		images[key] = img
		if img.Converted {
			if conversions[name] == nil {
				conversions[name] = &Conversion{File: name, Format: img.Format, Width: img.Width, Height: img.Height}
			}
			conversions[name].Gardens = append(conversions[name].Gardens, key)
		}
	}
	for _, name := range files {
		if c := conversions[name]; c != nil {
			res.Conversions = append(res.Conversions, *c)
		}
	}
	return images, nil
}

// spoolError is a failure to write the spool.
type spoolError struct{ err error }

func (e *spoolError) Error() string { return e.err.Error() }

// spoolImage loads the image name into a file of the spool directory (spool "": only
// checks it).
func spoolImage(media *Media, name, spool string) (Image, error) {
	if spool == "" {
		return media.LoadImage(name, nil)
	}
	f, err := os.CreateTemp(spool, "image-*.png")
	if err != nil {
		return Image{}, &spoolError{fmt.Errorf("image spool: %w", err)}
	}
	w := &spoolWriter{w: bufio.NewWriterSize(f, 64<<10)}
	img, err := media.LoadImage(name, w)
	if ferr := w.w.Flush(); ferr != nil && w.err == nil {
		w.err = ferr
	}
	if cerr := f.Close(); cerr != nil && w.err == nil {
		w.err = cerr
	}
	if w.err != nil {
		err = &spoolError{fmt.Errorf("image spool: %w", w.err)}
	}
	if err != nil {
		_ = os.Remove(f.Name()) // the spool goes as a whole anyway
		return Image{}, err
	}
	img.File = f.Name()
	return img, nil
}

// spoolWriter keeps the first write error, telling the disk's failures apart from
// the image's.
type spoolWriter struct {
	w   *bufio.Writer
	err error
}

func (s *spoolWriter) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	if err != nil && s.err == nil {
		s.err = err
	}
	return n, err
}

var coordinateIndex = regexp.MustCompile(`coordinates\[(\d+)\](\.?)`)

// coordinateNames names the dump's coordinate records in a store message about a
// garden's coordinates ("coordinates[2].latitude …" → "coordinate pk=9: latitude …").
func (c *Converted) coordinateNames(p store.ImportProblem) string {
	if p.Kind != store.ImportGardens {
		return p.Message
	}
	pks := c.coordinatePKs[p.Key]
	return coordinateIndex.ReplaceAllStringFunc(p.Message, func(m string) string {
		sub := coordinateIndex.FindStringSubmatch(m)
		i, err := strconv.Atoi(sub[1])
		if err != nil || i >= len(pks) {
			return m
		}
		if sub[2] == "." { // "coordinates[2].latitude must …"
			return ModelCoordinate + " pk=" + pks[i] + ": "
		}
		return ModelCoordinate + " pk=" + pks[i]
	})
}

func counts(in store.Import, plan store.ImportPlan) []KindCount {
	sizes := map[store.ImportKind]int{
		store.ImportUsers: len(in.Users), store.ImportCompanies: len(in.Companies), store.ImportGardens: len(in.Gardens),
		store.ImportBeds: len(in.Beds), store.ImportCompanyPerms: len(in.CompanyPerms), store.ImportGardenPerms: len(in.GardenPerms),
		store.ImportWidgets: len(in.Widgets),
	}
	var out []KindCount
	for _, k := range store.ImportKinds {
		kp := plan.Kinds[k]
		out = append(out, KindCount{Model: kindModel[k], Kind: k, InDump: sizes[k], New: len(kp.New), Already: len(kp.Already),
			Skipped: len(kp.Skipped), KeepsIDs: kp.KeepIDs || len(kp.New) == 0})
	}
	return out
}

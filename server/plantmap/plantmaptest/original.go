package plantmaptest

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// EnvDir names the original project's sample data directory (holding fixtures/ and
// images/) explicitly.
const EnvDir = "GARDEND_PLANTMAP_DIR"

// OriginalPassword is every fixture user's password in the original's sample data.
const OriginalPassword = "1234"

// loaddataOrder ranks the fixtures' models as loaddata needs them (referenced first).
var loaddataOrder = []string{"auth.user", "restapi.company", "restapi.garden", "restapi.coordinate", "restapi.bed",
	"restapi.companypermission", "restapi.gardenpermission", "restapi.widget"}

// OriginalDir returns the original project's sample data directory: $GARDEND_PLANTMAP_DIR
// (which must hold fixtures/), else shared/plantmap beside the repository (the
// directory above the one holding go.mod), the layout of the team's machines. A clone
// anywhere else has none, and that is no failure: no test needs it.
func OriginalDir(tb testing.TB) (string, bool) {
	tb.Helper()
	if d := os.Getenv(EnvDir); d != "" {
		if !isDir(filepath.Join(d, "fixtures")) {
			tb.Fatalf("%s=%s has no fixtures directory", EnvDir, d)
		}
		return d, true
	}
	root, err := moduleRoot()
	if err != nil {
		tb.Fatal(err)
	}
	d := filepath.Join(filepath.Dir(root), "shared", "plantmap")
	if !isDir(filepath.Join(d, "fixtures")) {
		return "", false
	}
	return d, true
}

// moduleRoot is the nearest directory at or above the working directory (a test's
// package directory) that holds go.mod.
func moduleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", errors.New("no go.mod above " + wd)
		}
	}
}

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// Original returns the original project's sample data as a Sample when it is at hand
// (see OriginalDir): its fixtures as one dump, and its picture (o.KeepPicture) or,
// under the picture's name, one made like Generate's.
func Original(tb testing.TB, o Options) (*Sample, bool) {
	tb.Helper()
	dir, ok := OriginalDir(tb)
	if !ok {
		return nil, false
	}
	files, err := filepath.Glob(filepath.Join(dir, "fixtures", "*.json"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no fixtures in %s: %v", dir, err)
	}
	var entries []Entry
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		entries = append(entries, Decode(tb, data)...)
	}
	slices.SortStableFunc(entries, func(a, b Entry) int {
		return slices.Index(loaddataOrder, a.Model) - slices.Index(loaddataOrder, b.Model)
	})
	s := &Sample{Name: "original", Password: OriginalPassword, dump: Encode(tb, entries)}
	for _, e := range entries {
		if p, _ := e.Fields["image_path"].(string); e.Model == "restapi.garden" && p != "" {
			s.ImageFile = p[strings.LastIndexAny(p, `/\`)+1:]
			break
		}
	}
	if o.KeepPicture {
		s.MediaDir = filepath.Join(dir, "images")
		img, err := decodeFile(filepath.Join(s.MediaDir, s.ImageFile))
		if err != nil {
			tb.Fatal(err)
		}
		s.Image, s.Width, s.Height = img, img.Bounds().Dx(), img.Bounds().Dy()
	} else {
		s.Width, s.Height = o.size()
		s.MediaDir, s.Image = writePicture(tb, s.ImageFile, s.Width, s.Height)
	}
	tb.Logf("the original's sample data in %s", dir)
	return s, true
}

// Samples returns the generated installation and, when it is at hand, the original's.
func Samples(tb testing.TB, o Options) []*Sample {
	tb.Helper()
	out := []*Sample{Generate(tb, o)}
	if s, ok := Original(tb, o); ok {
		out = append(out, s)
	}
	return out
}

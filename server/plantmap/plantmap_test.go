package plantmap_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/imagestore"
	"github.com/gardend/gardend/server/plantmap"
	"github.com/gardend/gardend/server/plantmap/plantmaptest"
	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/bolt"
)

type target struct {
	dir    string
	st     *bolt.Store
	images *imagestore.Store
}

func newTarget(t *testing.T) *target {
	t.Helper()
	dir := t.TempDir()
	st, err := bolt.Open(filepath.Join(dir, bolt.FileName), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	images, err := imagestore.Open(filepath.Join(dir, "images"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Check(); err != nil {
			t.Errorf("bbolt check: %v", err)
		}
		if err := st.CheckIndexes(); err != nil {
			t.Errorf("index check: %v", err)
		}
		st.Close()
	})
	return &target{dir: dir, st: st, images: images}
}

func (tg *target) run(t *testing.T, dump []byte, media string, dryRun bool) (*plantmap.Result, error) {
	t.Helper()
	return plantmap.Import(context.Background(), plantmap.Options{
		Dump: readDump(t, dump), MediaDir: media, DryRun: dryRun, Store: tg.st, Images: tg.images,
	})
}

func readDump(t *testing.T, dump []byte) *plantmap.Dump {
	t.Helper()
	d, err := plantmap.ReadDump(bytes.NewReader(dump), nil)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (tg *target) imageFiles(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(tg.dir, "images"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func count(res *plantmap.Result, model string) plantmap.KindCount {
	for _, c := range res.Counts {
		if c.Model == model {
			return c
		}
	}
	return plantmap.KindCount{}
}

func messages(res *plantmap.Result, warning bool) []string {
	var out []string
	for _, p := range res.Problems {
		if p.Warning == warning {
			out = append(out, p.Model+" pk="+p.PK+": "+p.Message)
		}
	}
	return out
}

func containsAll(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !slices.ContainsFunc(got, func(g string) bool { return strings.Contains(g, w) }) {
			t.Errorf("%s: no %q in\n%s", what, w, strings.Join(got, "\n"))
		}
	}
}

// TestImportSample: a PlantMap installation (the generated one, and the original
// project's sample data when it is at hand) comes over whole with its ids; the JPEG
// "PNG" is converted once, pixel for pixel, for the gardens that show it; every
// password hash is kept as Django wrote it, for a hasher gardend verifies; a second
// run changes nothing. (cli's end-to-end test logs in with each hash.)
func TestImportSample(t *testing.T) {
	var shapes []string
	for _, s := range plantmaptest.Samples(t, plantmaptest.Options{}) {
		shapes = append(shapes, shapeOf(s.Entries(t)))
		t.Run(s.Name, func(t *testing.T) { testImportSample(t, s) })
	}
	// The generated installation has the original's shape: its models, how many of
	// each, their fields. (Compared when the original is at hand; the literal counts
	// below hold either way.)
	if len(shapes) == 2 && shapes[0] != shapes[1] {
		t.Errorf("generated:\n%s\noriginal:\n%s", shapes[0], shapes[1])
	}
	const want = `auth.user 5: email first_name last_name password username
restapi.bed 11: garden uuid
restapi.company 4: name
restapi.companypermission 3: company permission user
restapi.coordinate 9: garden latitude longitude name
restapi.garden 4: company image_path name
restapi.gardenpermission 2: garden permission user
restapi.widget 5: data user
`
	if shapes[0] != want {
		t.Errorf("generated shape:\n%s\nwant:\n%s", shapes[0], want)
	}
}

// shapeOf lists per model the number of entries and their fields.
func shapeOf(entries []plantmaptest.Entry) string {
	counts := map[string]int{}
	fields := map[string]map[string]bool{}
	for _, e := range entries {
		counts[e.Model]++
		if fields[e.Model] == nil {
			fields[e.Model] = map[string]bool{}
		}
		for f := range e.Fields {
			fields[e.Model][f] = true
		}
	}
	var b strings.Builder
	for _, m := range slices.Sorted(maps.Keys(counts)) {
		fmt.Fprintf(&b, "%s %d: %s\n", m, counts[m], strings.Join(slices.Sorted(maps.Keys(fields[m])), " "))
	}
	return b.String()
}

func testImportSample(t *testing.T, s *plantmaptest.Sample) {
	tg := newTarget(t)
	entries := s.Entries(t)
	res, err := tg.run(t, s.Dump(), s.MediaDir, false)
	if err != nil {
		t.Fatalf("%v\n%s", err, strings.Join(messages(res, false), "\n"))
	}
	inDump := map[string]int{}
	var withPicture []uint64
	admins := map[string]bool{}
	var coordinates int
	for _, e := range entries {
		inDump[e.Model]++
		switch e.Model {
		case plantmap.ModelGarden:
			if e.Fields["image_path"] != "" {
				withPicture = append(withPicture, uint64(number(t, e.PK)))
			}
		case plantmap.ModelCompanyPerm:
			if e.Fields["permission"] == "a" {
				admins[fmt.Sprint(e.Fields["company"])] = true
			}
		case plantmap.ModelCoordinate:
			coordinates++
		}
	}
	for _, model := range []string{plantmap.ModelUser, plantmap.ModelCompany, plantmap.ModelGarden, plantmap.ModelBed,
		plantmap.ModelCompanyPerm, plantmap.ModelGardenPerm, plantmap.ModelWidget} {
		want := inDump[model]
		if c := count(res, model); want == 0 || c.InDump != want || c.New != want || !c.KeepsIDs && model != plantmap.ModelWidget {
			t.Errorf("%s: %+v, want %d new with their ids", model, c, want)
		}
	}
	if res.Coordinates != coordinates || !res.Written || len(messages(res, false)) != 0 {
		t.Errorf("coordinates %d (dump: %d), written %v, errors %v", res.Coordinates, coordinates, res.Written, messages(res, false))
	}
	wantWarnings := []string{"auth.user pk=1: no date_joined"}
	for _, e := range entries {
		if pk := fmt.Sprint(e.PK); e.Model == plantmap.ModelCompany && !admins[pk] {
			wantWarnings = append(wantWarnings, "restapi.company pk="+pk+": the company has no admin")
		}
	}
	if len(wantWarnings) < 2 {
		t.Errorf("the sample has no company without an admin")
	}
	containsAll(t, "warnings", messages(res, true), wantWarnings...)
	if len(res.Conversions) != 1 {
		t.Fatalf("conversions %+v", res.Conversions)
	}
	if c := res.Conversions[0]; c.File != s.ImageFile || c.Format != "jpeg" || c.Width != s.Width || c.Height != s.Height || !slices.Equal(c.Gardens, withPicture) || len(withPicture) < 2 {
		t.Errorf("conversion %+v, want %s %d×%d for gardens %v", c, s.ImageFile, s.Width, s.Height, withPicture)
	}

	// The gardens with a picture each have their own PNG of the original's size.
	for _, id := range withPicture {
		path, cs, err := tg.st.GardenImage(id)
		if err != nil || len(cs) != 3 {
			t.Fatalf("garden %d: %q %v %v", id, path, cs, err)
		}
		data, err := os.ReadFile(filepath.Join(tg.dir, filepath.FromSlash(path)))
		if err != nil {
			t.Fatal(err)
		}
		if w, h, err := imagestore.CheckPNG(data); err != nil || w != s.Width || h != s.Height {
			t.Errorf("garden %d image: %d×%d %v", id, w, h, err)
		}
		got, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		for y := 0; y < s.Height; y++ {
			for x := 0; x < s.Width; x++ {
				r0, g0, b0, a0 := s.Image.At(x, y).RGBA()
				r1, g1, b1, a1 := got.At(x, y).RGBA()
				if r0>>8 != r1>>8 || g0>>8 != g1>>8 || b0>>8 != b1>>8 || a0 != a1 {
					t.Fatalf("garden %d: pixel %d,%d is %v, the JPEG's %v", id, x, y, got.At(x, y), s.Image.At(x, y))
				}
			}
		}
	}
	if len(tg.imageFiles(t)) != len(withPicture) {
		t.Errorf("image files %v", tg.imageFiles(t))
	}
	hashers := map[string]bool{}
	for _, e := range entries {
		switch e.Model {
		case plantmap.ModelGarden:
			id := uint64(number(t, e.PK))
			if g, _ := tg.st.Garden(id); slices.Contains(withPicture, id) != (g.ImagePath != nil) || g.Name != e.Fields["name"] || g.Company != uint64(number(t, e.Fields["company"])) {
				t.Errorf("garden %d: %+v, dump %v", id, g, e.Fields)
			}
		case plantmap.ModelUser:
			u, err := tg.st.UserByUsername(e.Fields["username"].(string))
			alg, supported := store.DjangoHashAlgorithm(u.PasswordHash)
			if err != nil || u.ID != uint64(number(t, e.PK)) || u.PasswordHash != e.Fields["password"] || !supported || u.SiteAdmin {
				t.Errorf("user %v: %+v %v (hash %s, verified: %v)", e.Fields["username"], u, err, alg, supported)
			}
			hashers[alg] = true
		}
	}
	if s.Name == "generated" && len(hashers) != 3 {
		t.Errorf("hashers %v, want pbkdf2_sha256, bcrypt_sha256 and argon2", hashers)
	}

	// Again: nothing new, nothing written, no image added.
	again, err := tg.run(t, s.Dump(), s.MediaDir, false)
	if err != nil || again.Written || again.Plan.HasNew() {
		t.Fatalf("second run: %v written %v", err, again.Written)
	}
	if c := count(again, plantmap.ModelBed); c.Already != inDump[plantmap.ModelBed] || c.New != 0 {
		t.Errorf("second run beds: %+v", c)
	}
	if n := len(tg.imageFiles(t)); n != len(withPicture) {
		t.Errorf("%d image files after the second run", n)
	}
}

// number reads a pk or reference as the dump decodes it.
func number(t *testing.T, v any) int64 {
	t.Helper()
	n, err := strconv.ParseInt(fmt.Sprint(v), 10, 64)
	if err != nil {
		t.Fatalf("%v is not a number", v)
	}
	return n
}

// TestImportFullDump: a real dumpdata export holds more models and fields; the extra
// models are counted and left out, the extra fields read (superuser, dates). A dry run
// before writes nothing at all.
func TestImportFullDump(t *testing.T) {
	tg := newTarget(t)
	sample := plantmaptest.Generate(t, plantmaptest.Options{})
	dump, media := plantmaptest.Encode(t, plantmaptest.FullDump(t, sample.Entries(t))), sample.MediaDir
	dry, err := tg.run(t, dump, media, true)
	if err != nil || dry.Written || count(dry, plantmap.ModelUser).New != 5 {
		t.Fatalf("dry run: %v %+v", err, dry)
	}
	if us, _ := tg.st.ListUsers(); len(us) != 0 || len(tg.imageFiles(t)) != 0 {
		t.Fatalf("the dry run wrote %d users, %d images", len(us), len(tg.imageFiles(t)))
	}

	res, err := tg.run(t, dump, media, false)
	if err != nil || !res.Written {
		t.Fatalf("%v %v", err, messages(res, false))
	}
	wantSkipped := map[string]int{"contenttypes.contenttype": 2, "auth.permission": 1, "auth.group": 1, "sessions.session": 1, "admin.logentry": 1, "knox.authtoken": 2}
	for m, n := range wantSkipped {
		if res.SkippedModels[m] != n {
			t.Errorf("skipped %s: %d, want %d", m, res.SkippedModels[m], n)
		}
	}
	if len(res.SkippedModels) != len(wantSkipped) {
		t.Errorf("skipped models %v", res.SkippedModels)
	}
	admin, _ := tg.st.UserByID(1)
	g1, _ := tg.st.UserByID(2)
	if !admin.SiteAdmin || admin.LastLogin != nil || !admin.DateJoined.Equal(time.Date(2022, 11, 10, 9, 0, 0, 123e6, time.UTC)) {
		t.Errorf("user 1: %+v", admin)
	}
	if g1.SiteAdmin || g1.LastLogin == nil || !g1.LastLogin.Equal(time.Date(2023, 2, 1, 12, 30, 45, 678e6, time.UTC)) {
		t.Errorf("user 2: %+v", g1)
	}
	if slices.ContainsFunc(messages(res, true), func(m string) bool { return strings.Contains(m, "date_joined") }) {
		t.Errorf("warnings about dates the dump has: %v", messages(res, true))
	}
}

// TestImportReportsEveryProblem: each problem is reported with the dump's model and
// pk, all at once, and nothing is written.
func TestImportReportsEveryProblem(t *testing.T) {
	tg := newTarget(t)
	entries := plantmaptest.Generate(t, plantmaptest.Options{}).Entries(t)
	entries = append(entries,
		plantmaptest.Entry{Model: "auth.user", PK: 6, Fields: map[string]any{"username": "ANA", "first_name": "a", "last_name": "b", "email": "", "password": "md5$x$y"}},
		plantmaptest.Entry{Model: "auth.user", PK: 7, Fields: map[string]any{"username": "bad name", "password": "!"}},
		plantmaptest.Entry{Model: "restapi.company", PK: 5, Fields: map[string]any{"name": strings.Repeat("x", 200)}},
		plantmaptest.Entry{Model: "restapi.company", PK: 6, Fields: map[string]any{"name": nil}},
		plantmaptest.Entry{Model: "restapi.coordinate", PK: 10, Fields: map[string]any{"name": "bottom_right", "latitude": "95.5", "longitude": "7.6", "garden": 1}},
		plantmaptest.Entry{Model: "restapi.coordinate", PK: 11, Fields: map[string]any{"name": "x", "latitude": 1, "longitude": 2, "garden": 77}},
		plantmaptest.Entry{Model: "restapi.companypermission", PK: 4, Fields: map[string]any{"permission": "a", "company": 1, "user": 99}},
		plantmaptest.Entry{Model: "restapi.gardenpermission", PK: 3, Fields: map[string]any{"permission": "x", "garden": 2, "user": 2}},
		plantmaptest.Entry{Model: "restapi.bed", PK: 12, Fields: map[string]any{"uuid": plantmaptest.ProjectUUID(1), "garden": 1}},
		plantmaptest.Entry{Model: "restapi.bed", PK: 13, Fields: map[string]any{"uuid": 42, "garden": 1}},
		plantmaptest.Entry{Model: "restapi.sensor", PK: 1, Fields: map[string]any{"kind": "soil"}},
	)
	res, err := tg.run(t, plantmaptest.Encode(t, entries), "", false)
	if !errors.Is(err, plantmap.ErrProblems) {
		t.Fatalf("error %v", err)
	}
	containsAll(t, "errors", messages(res, false),
		"restapi.garden pk=1: pass --media DIR",
		"auth.user pk=7: username may contain only",
		"restapi.company pk=5: name must be at most 128 characters",
		"restapi.garden pk=1: restapi.coordinate pk=10: latitude must be between -90 and 90",
		"restapi.coordinate pk=11: its garden 77 is not in the dump",
		"restapi.companypermission pk=4: its user 99 is not in the import",
		"restapi.gardenpermission pk=3: permission must be 'u' or 'a'",
		"restapi.bed pk=12: bed 1 of the same garden has project",
		"restapi.bed pk=13: uuid must be a string",
	)
	containsAll(t, "warnings", messages(res, true),
		`auth.user pk=6: username "ANA" looks like "ana" (id 1) but for case`,
		`auth.user pk=6: its password hash ("md5") is not one gardend verifies`,
		`restapi.company pk=6: it has no name; imported as "Company 6"`,
		"restapi.sensor pk=*: 1 records left out",
	)
	if res.Written {
		t.Error("written despite errors")
	}
	if us, _ := tg.st.ListUsers(); len(us) != 0 || len(tg.imageFiles(t)) != 0 {
		t.Errorf("a failed import wrote %d users and %d images", len(us), len(tg.imageFiles(t)))
	}
}

// TestImportUndoesImagesWhenTheWriteFails: images written for a transaction that then
// fails are removed; the database stays as it was.
func TestImportUndoesImagesWhenTheWriteFails(t *testing.T) {
	tg := newTarget(t)
	sample := plantmaptest.Generate(t, plantmaptest.Options{})
	failing := &failingStore{Store: tg.st}
	res, err := plantmap.Import(context.Background(), plantmap.Options{
		Dump: readDump(t, sample.Dump()), MediaDir: sample.MediaDir, Store: failing, Images: tg.images,
	})
	if err == nil || res.Written || !failing.applied {
		t.Fatalf("import over a failing write: %v", err)
	}
	if files := tg.imageFiles(t); len(files) != 0 {
		t.Errorf("images left behind: %v", files)
	}
	if us, _ := tg.st.ListUsers(); len(us) != 0 {
		t.Errorf("%d users written", len(us))
	}
}

// failingStore plans with the real store and fails the write.
type failingStore struct {
	*bolt.Store
	applied bool
}

func (f *failingStore) ApplyImport(store.Import, store.ImportPlan, map[uint64]string) (store.ImportPlan, error) {
	f.applied = true
	return store.ImportPlan{}, errors.New("disk full")
}

func TestReadDumpRefusesWhatIsNotADump(t *testing.T) {
	for _, tc := range []struct{ name, dump, want string }{
		{"empty", "", "the file is empty"},
		{"object", `{"model": "auth.user"}`, "must be a JSON array"},
		{"truncated", `[{"model": "auth.user", "pk": 1, "fields": {"username": "a"`, "ends in the middle"},
		{"no model", `[{"pk": 1, "fields": {}}]`, "entry 0 has no \"model\""},
		{"no fields", `[{"model": "restapi.company", "pk": 1}]`, "has no \"fields\" object"},
		{"trailing", `[] []`, "something follows"},
		{"not json", `[{"model": "auth.user", "pk": 1, "fields": {]`, "entry 0"},
	} {
		_, err := plantmap.ReadDump(strings.NewReader(tc.dump), nil)
		if !errors.Is(err, plantmap.ErrDump) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	d, err := plantmap.ReadDump(strings.NewReader(`[{"model": "sessions.session", "pk": "x", "fields": {"a": 1}}]`), nil)
	if err != nil || d.Skipped["sessions.session"] != 1 || len(d.Records) != 0 {
		t.Errorf("skipped model: %+v %v", d, err)
	}
}

// TestNaturalKeysAndDjangoSpellings: a dump made with --natural-foreign names users by
// their username; coordinates whose name is their pk, string numbers and zone-less
// timestamps are read as Django wrote them.
func TestNaturalKeysAndDjangoSpellings(t *testing.T) {
	tg := newTarget(t)
	dump := `[
 {"model": "auth.user", "pk": 1, "fields": {"username": "ana", "first_name": "", "last_name": "", "email": null, "password": "!", "date_joined": "2021-05-06T07:08:09.5", "is_active": false}},
 {"model": "auth.user", "pk": 2, "fields": {"username": "ben", "first_name": "B", "last_name": "B", "email": "b@x.de", "password": "pbkdf2_sha256$1000$s$h", "date_joined": "2021-05-06 07:08:09+02:00", "is_active": false}},
 {"model": "restapi.company", "pk": 1, "fields": {"name": "c"}},
 {"model": "restapi.garden", "pk": 1, "fields": {"name": "g", "company": 1, "image_path": null}},
 {"model": "restapi.coordinate", "pk": "top_left", "fields": {"latitude": 1, "longitude": 2, "garden": 1}},
 {"model": "restapi.companypermission", "pk": 1, "fields": {"permission": "a", "company": 1, "user": ["ana"]}},
 {"model": "restapi.widget", "pk": 1, "fields": {"user": ["ben"], "data": "[\"weather\"]"}}
]`
	res, err := tg.run(t, []byte(dump), "", false)
	if err != nil {
		t.Fatalf("%v %v", err, messages(res, false))
	}
	containsAll(t, "warnings", messages(res, true),
		"restapi.garden pk=1: it has no image: its 1 coordinates are left out",
		"auth.user pk=2: inactive in PlantMap")
	ana, _ := tg.st.UserByUsername("ana")
	ben, _ := tg.st.UserByUsername("ben")
	if !ana.DateJoined.Equal(time.Date(2021, 5, 6, 7, 8, 9, 5e8, time.UTC)) || ana.PasswordHash != "!" {
		t.Errorf("ana: %+v", ana)
	}
	if !ben.DateJoined.Equal(time.Date(2021, 5, 6, 5, 8, 9, 0, time.UTC)) || ben.PasswordHash != "!pbkdf2_sha256$1000$s$h" {
		t.Errorf("ben: %+v", ben)
	}
	perms, _ := tg.st.CompanyPermissions(1)
	if len(perms) != 1 || perms[0].Username != "ana" {
		t.Errorf("permissions %+v", perms)
	}
	if w, _ := tg.st.Widgets(ben.ID); string(w) != `"[\"weather\"]"` {
		t.Errorf("widgets %s", w)
	}
}

// TestImportCostlyHashesUnusable: a hash that costs more than store.MaxHashCost logins
// to check (pbkdf2_sha1 with 10,000,000 iterations: seconds of CPU per wrong password,
// anonymous ones included) is imported unusable and counted; Django's defaults are
// imported as they are.
func TestImportCostlyHashesUnusable(t *testing.T) {
	tg := newTarget(t)
	const (
		costly  = "pbkdf2_sha1$10000000$KQ8zeK6wKRuR$tSJh4xdxfMJotlxfkCGjTFpGYZU="
		bcrypt  = "bcrypt$$2b$14$X2DPxLUP650uETGYOrXZS.4zW1Jk4nVG1fyYUXmfvOi3Zfe4DEgpK"
		django6 = "pbkdf2_sha256$1200000$LuKlEyk1ZdbXx8ctkvF9c7$21bgLk3zi8fHBCZdTkAKQT8e0nIGe7A+gmS4zFaqzd4="
	)
	dump := `[
 {"model": "auth.user", "pk": 1, "fields": {"username": "slow", "password": "` + costly + `", "date_joined": "2021-05-06T07:08:09Z"}},
 {"model": "auth.user", "pk": 2, "fields": {"username": "slower", "password": "` + bcrypt + `", "date_joined": "2021-05-06T07:08:09Z"}},
 {"model": "auth.user", "pk": 3, "fields": {"username": "usual", "password": "` + django6 + `", "date_joined": "2021-05-06T07:08:09Z"}}
]`
	res, err := tg.run(t, []byte(dump), "", false)
	if err != nil {
		t.Fatalf("%v %v", err, messages(res, false))
	}
	containsAll(t, "warnings", messages(res, true),
		"auth.user pk=1: its password hash (pbkdf2_sha1) costs 56 logins to check",
		"auth.user pk=2: its password hash (bcrypt) costs 29 logins to check")
	if !slices.Equal(res.CostlyHashes, []string{"slow", "slower"}) {
		t.Errorf("CostlyHashes = %q", res.CostlyHashes)
	}
	for name, want := range map[string]string{"slow": "!" + costly, "slower": "!" + bcrypt, "usual": django6} {
		if u, err := tg.st.UserByUsername(name); err != nil || u.PasswordHash != want {
			t.Errorf("%s: hash %q, %v; want %q", name, u.PasswordHash, err, want)
		}
	}
	// Again: nothing new, nothing counted.
	res, err = tg.run(t, []byte(dump), "", false)
	if err != nil || len(res.CostlyHashes) != 0 {
		t.Errorf("second run: %q, %v", res.CostlyHashes, err)
	}
}

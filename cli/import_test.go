package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gardend/gardend/server/plantmap/plantmaptest"
	"github.com/gardend/gardend/store/bolt"
)

func writeDump(t *testing.T, entries []plantmaptest.Entry) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "dump.json")
	if err := os.WriteFile(path, plantmaptest.Encode(t, entries), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func wantLines(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

// TestImportPlantMapCommand: a dry run reports and writes nothing (not even a
// database); the import reports what it did; a second one finds nothing new.
func TestImportPlantMapCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	sample := plantmaptest.Generate(t, plantmaptest.Options{})
	dump, media := writeDump(t, plantmaptest.FullDump(t, sample.Entries(t))), sample.MediaDir

	out, err := run(t, "", "import", "plantmap", dump, "--media", media, "--data", dir, "--dry-run")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	wantLines(t, out, "dry run: nothing was written", "auth.user", "image "+sample.ImageFile+" is a JPEG, 40×30: converted to PNG at that size (garden 1, 3, 4)",
		"left out (not gardend's to keep): admin.logentry 1, auth.group 1, auth.permission 1, contenttypes.contenttype 2, knox.authtoken 2, sessions.session 1")
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the dry run made the data directory: %v", err)
	}

	out, err = run(t, "", "import", "plantmap", dump, "--media", media, "--data", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	wantLines(t, out, "imported 34 records in one transaction", "warning  restapi.company pk=3: the company has no admin")
	// MODEL, IN DUMP, NEW, ALREADY IMPORTED, SKIPPED, IDS
	for _, row := range [][]string{
		{"auth.user", "5", "5", "0", "0", "kept"}, {"restapi.company", "4", "4", "0", "0", "kept"},
		{"restapi.garden", "4", "4", "0", "0", "kept"}, {"restapi.coordinate", "9"}, {"restapi.bed", "11", "11", "0", "0", "kept"},
		{"restapi.companypermission", "3", "3", "0", "0", "kept"}, {"restapi.gardenpermission", "2", "2", "0", "0", "kept"},
		{"restapi.widget", "5", "5", "0", "0", "-"},
	} {
		found := false
		for _, line := range strings.Split(out, "\n") {
			if strings.Join(strings.Fields(line), " ") == strings.Join(row, " ") || row[0] == "restapi.coordinate" && strings.HasPrefix(strings.Join(strings.Fields(line), " "), "restapi.coordinate 9 ") {
				found = true
			}
		}
		if !found {
			t.Errorf("no row %v in:\n%s", row, out)
		}
	}
	users, err := run(t, "", "inspect", "users", "--data", dir)
	if err != nil || !strings.Contains(users, "eli") {
		t.Fatalf("inspect users: %v\n%s", err, users)
	}

	out, err = run(t, "", "import", "plantmap", dump, "--media", media, "--data", dir)
	if err != nil {
		t.Fatal(err)
	}
	wantLines(t, out, "nothing new to import: everything in the dump was imported before")
}

// TestImportPlantMapIntoUsedData: a site administrator made before the import keeps
// id 1, so the users' ids are mapped and the map printed.
func TestImportPlantMapIntoUsedData(t *testing.T) {
	dir := t.TempDir()
	if _, err := run(t, "root-password-1\n", "admin", "create", "--data", dir, "--username", "root", "--password-stdin"); err != nil {
		t.Fatal(err)
	}
	sample := plantmaptest.Generate(t, plantmaptest.Options{})
	out, err := run(t, "", "import", "plantmap", writeDump(t, sample.Entries(t)), "--media", sample.MediaDir, "--data", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	wantLines(t, out, "new ids of auth.user (dump pk→gardend id): 1→2, 2→3, 3→4, 4→5, 5→6")
	st, err := bolt.Open(filepath.Join(dir, bolt.FileName), bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	perms, _ := st.CompanyPermissions(1)
	if len(perms) != 2 || perms[0].Username != "ana" || perms[1].Username != "ben" {
		t.Errorf("company 1 permissions %+v", perms)
	}
}

// TestImportPlantMapRefusals: a dump with errors lists them (the dump's text escaped)
// and writes nothing; a running server keeps the import out.
func TestImportPlantMapRefusals(t *testing.T) {
	dir := t.TempDir()
	sample := plantmaptest.Generate(t, plantmaptest.Options{})
	entries := sample.Entries(t)
	entries = append(entries,
		plantmaptest.Entry{Model: "restapi.company", PK: 9, Fields: map[string]any{"name": strings.Repeat("x", 130)}},
		plantmaptest.Entry{Model: "restapi.bed", PK: 40, Fields: map[string]any{"uuid": "\u202eabc", "garden": 1}},
		// Text of the dump that the report repeats: a file name and a model name.
		plantmaptest.Entry{Model: "restapi.garden", PK: 9, Fields: map[string]any{"name": "g", "company": 1, "image_path": "/x/evil\x1b]0;title\x07.png"}},
		plantmaptest.Entry{Model: "evil\x1b[2J\r\nerror    auth.user pk=1: forged", PK: 1, Fields: map[string]any{}},
	)
	out, err := run(t, "", "import", "plantmap", writeDump(t, entries), "--data", dir, "--media", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "error(s), listed above; nothing was imported") {
		t.Fatalf("error %v", err)
	}
	wantLines(t, out, "error    restapi.garden pk=1: its image file "+sample.ImageFile+" is not in", "error    restapi.company pk=9: name must be at most 128 characters",
		"error    restapi.bed pk=40: uuid must be", `evil\x1b]0;title\x07.png`, `evil\x1b[2J\r\nerror`)
	if strings.ContainsAny(out, "\x1b\r\a\u202e") || strings.Contains(out, "\nerror    auth.user pk=1: forged") {
		t.Errorf("the dump's text reached the terminal unescaped:\n%q", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "images")); err == nil {
		if entries, _ := os.ReadDir(filepath.Join(dir, "images")); len(entries) != 0 {
			t.Errorf("images written: %v", entries)
		}
	}

	if _, err := run(t, "", "import", "plantmap", filepath.Join(t.TempDir(), "missing.json"), "--data", dir); err == nil || !strings.Contains(err.Error(), "open the dump") {
		t.Errorf("missing dump: %v", err)
	}
	busy := t.TempDir()
	serve(t, busy)
	if _, err := run(t, "", "import", "plantmap", writeDump(t, sample.Entries(t)), "--media", sample.MediaDir, "--data", busy); err == nil || !strings.Contains(err.Error(), "stop gardend serve") {
		t.Errorf("import beside a running server: %v", err)
	}
}

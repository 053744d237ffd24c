package cli_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gardend/gardend/cli"
	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/bolt"
	"github.com/gardend/gardend/store/bolt/bolttest"
)

// hostile holds what a registered user can put in a name: escape sequences that clear
// or recolour the operator's terminal, CR/LF and tabs that forge table rows, a bidi
// override, a C1 control (CSI) and a byte that is not UTF-8 (stored as U+FFFD, since
// records are JSON).
const hostile = "Eve\x1b[2J\x1b[31m\r\n99\tforged\troot\u202e\u009b\xff"

// Every table the CLI prints keeps one row per record and sends no control
// character (but the newline ending each row) to the terminal. gardend refuses such
// names now (and repairs a server's error text), but an older one stored them: the
// test writes them into the file behind the store's back.
func TestTablesEscapeHostileNames(t *testing.T) {
	dir := t.TempDir()
	st, err := bolt.Open(filepath.Join(dir, bolt.FileName), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	u, err := st.CreateUser(store.NewUser{Username: "eve", FirstName: "Eve", LastName: "Eve", Email: "", PasswordHash: "not-a-hash"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := st.CreateCompany(u.ID, "Eve")
	if err != nil {
		t.Fatal(err)
	}
	g, err := st.CreateGarden(c.ID, "Eve")
	if err != nil {
		t.Fatal(err)
	}
	const project, cloud = "3fa85f64-5717-4562-b3fc-2c963f66afa6", "9c1d85f6-4717-4562-b3fc-2c963f66afa6"
	if _, err := st.CreateBed(g.ID, project, "Eve"); err != nil {
		t.Fatal(err)
	}
	job := store.CloudJob{Project: project, Cloud: cloud, CloudInputs: store.CloudInputs{Frame: "map"}}
	if _, err := st.EnqueueClouds([]store.CloudJob{job}, 0); err != nil {
		t.Fatal(err)
	}
	// A spatial server's error text ends up here too.
	if _, ok, err := st.RecordCloudFailure(project, cloud, job.CloudInputs, "Eve", store.RetryPolicy{MaxAttempts: 3, Backoff: 1}); err != nil || !ok {
		t.Fatalf("record failure: %v %v", ok, err)
	}
	st.Close()
	if err := bolttest.SetFirstRecordFields(filepath.Join(dir, bolt.FileName), map[string]map[string]string{
		"users":     {"first_name": hostile, "last_name": hostile},
		"companies": {"name": hostile},
		"gardens":   {"name": hostile},
		"beds":      {"name": hostile},
		"pc_queue":  {"last_error": hostile},
	}); err != nil {
		t.Fatal(err)
	}

	for view, rows := range map[string]int{"users": 1, "companies": 1, "gardens": 1, "permissions": 1, "beds": 1, "queue": 1} {
		out, err := run(t, "", "inspect", view, "--data", dir)
		if err != nil {
			t.Fatalf("inspect %s: %v", view, err)
		}
		checkTerminalSafe(t, "inspect "+view, out)
		if lines := strings.Count(out, "\n"); lines != 1+rows {
			t.Errorf("inspect %s: %d lines, want a header and %d rows:\n%s", view, lines, rows, out)
		}
		if view != "permissions" && !strings.Contains(out, `Eve\x1b[2J\x1b[31m\r\n99\tforged\troot\u202e\u009b`+"\uFFFD") {
			t.Errorf("inspect %s does not show the name escaped:\n%s", view, out)
		}
		// JSON, escaped beyond what encoding/json does, still means the same.
		js, err := run(t, "", "inspect", view, "--json", "--data", dir)
		if err != nil {
			t.Fatalf("inspect %s --json: %v", view, err)
		}
		checkTerminalSafe(t, "inspect "+view+" --json", js)
		if view != "permissions" && view != "queue" && !strings.Contains(js, `\u202e\u009b`) {
			t.Errorf("inspect %s --json:\n%s", view, js)
		}
		var v any
		if err := json.Unmarshal([]byte(js), &v); err != nil {
			t.Errorf("inspect %s --json is not JSON: %v", view, err)
		}
	}

	// A file name in the data directory reaches the backup's warnings.
	if err := os.WriteFile(filepath.Join(dir, "x\x1b[31m\rforged"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := cli.NewRootCommand()
	var out, errOut bytes.Buffer
	cmd.SetArgs([]string{"backup", "--data", dir, filepath.Join(t.TempDir(), "b.tar")})
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	checkTerminalSafe(t, "backup", out.String()+errOut.String())
	if !strings.Contains(errOut.String(), `x\x1b[31m\rforged`) {
		t.Errorf("backup warning: %q", errOut.String())
	}
}

func checkTerminalSafe(t *testing.T, what, out string) {
	t.Helper()
	for i, r := range out {
		if (r < 0x20 && r != '\n') || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u202e' {
			t.Errorf("%s prints %U at byte %d:\n%q", what, r, i, out)
			return
		}
	}
}

// The logbook's tables escape what gardeners type: a title may hold no control
// character, but bidi overrides and the like pass validation.
func TestLogTablesEscape(t *testing.T) {
	dir := t.TempDir()
	st, err := bolt.Open(filepath.Join(dir, bolt.FileName), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	u, err := st.CreateUser(store.NewUser{Username: "eve", FirstName: "E", LastName: "E", PasswordHash: "not-a-hash"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := st.CreateCompany(u.ID, "c")
	if err != nil {
		t.Fatal(err)
	}
	g, err := st.CreateGarden(c.ID, "g")
	if err != nil {
		t.Fatal(err)
	}
	typ, title, notes := store.LogHarvest, "Eve\u202eforged\u200f", "line\r\n\tforged"
	q := &store.Quantity{Value: 1, Unit: "k\u202eg"}
	l, err := st.CreateLog(g.ID, u.ID, store.LogPatch{Type: &typ, Title: &title, Notes: &notes, Quantity: &q}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.AddPhoto(g.ID, l.ID, store.Photo{ContentType: store.PhotoJPEG, Width: 4, Height: 3, Size: 10,
		Path: "photos/0123456789abcdef0123456789abcdef.jpg", Uploader: u.ID}, 0, nil); err != nil {
		t.Fatal(err)
	}
	st.Close()
	for view, says := range map[string]string{"logs": `Eve\u202eforged\u200f`, "photos": "photos/0123456789abcdef0123456789abcdef.jpg"} {
		out, err := run(t, "", "inspect", view, "--data", dir)
		if err != nil {
			t.Fatalf("inspect %s: %v", view, err)
		}
		checkTerminalSafe(t, "inspect "+view, out)
		if lines := strings.Count(out, "\n"); lines != 2 || !strings.Contains(out, says) {
			t.Errorf("inspect %s:\n%s", view, out)
		}
		if view == "logs" && !strings.Contains(out, `k\u202eg`) {
			t.Errorf("inspect logs: unit not escaped:\n%s", out)
		}
	}
}

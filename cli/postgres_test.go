package cli_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/gardend/gardend/server/plantmap/plantmaptest"
	"github.com/gardend/gardend/spatial/demo"
	"github.com/gardend/gardend/store/postgres/pgtest"
)

// TestCommandsOnPostgres: every command that works on the data works with --store
// on a PostgreSQL database: the administrator and the import write into it (while a
// node serves it: nodes share the database), inspect and beds read and write it,
// and a node serves what they wrote.
func TestCommandsOnPostgres(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	node := t.TempDir()
	base := serveOn(t, node, dsn)
	cli := t.TempDir() // the CLI's own data directory: a machine that runs no node

	if _, err := run(t, "root-password-1\n", "admin", "create", "--store", dsn, "--data", cli, "--username", "root", "--password-stdin"); err != nil {
		t.Fatal(err)
	}
	sample := plantmaptest.Generate(t, plantmaptest.Options{})
	dump, media := writeDump(t, plantmaptest.FullDump(t, sample.Entries(t))), sample.MediaDir
	out, err := run(t, "", "import", "plantmap", dump, "--media", media, "--store", dsn, "--data", cli, "--dry-run")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	wantLines(t, out, "dry run: nothing was written")
	out, err = run(t, "", "import", "plantmap", dump, "--media", media, "--store", dsn, "--data", cli)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	wantLines(t, out, "imported 34 records in one transaction", "new ids of auth.user (dump pk→gardend id): 1→2")
	out, err = run(t, "", "import", "plantmap", dump, "--media", media, "--store", dsn, "--data", cli)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	wantLines(t, out, "nothing new to import")

	for view, want := range map[string]string{
		"users": "root", "companies": "ID", "gardens": "images/", "permissions": "company", "stats": "import_map",
		"beds": "PROJECT", "queue": "PROJECT", "tokens": "DIGEST",
	} {
		out, err := run(t, "", "inspect", view, "--store", dsn, "--data", cli)
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("inspect %s: %v\n%s", view, err, out)
		}
	}
	if _, err := run(t, "", "beds", "add", "--store", dsn, "--data", cli, "--garden", "1", "--uuid", "3fa85f64-5717-4562-b3fc-2c963f66afa6"); err != nil {
		t.Fatal(err)
	}

	// The node serves what the commands wrote: the administrator logs in, the
	// imported garden's image comes out of the database.
	code, token := login(t, base, "root", "root-password-1")
	if code != http.StatusOK {
		t.Fatalf("root login on the node: %d", code)
	}
	if code, body := call(t, "GET", base+"/companies/1/gardens/1/image", token, ""); code != http.StatusOK || !strings.Contains(string(body), "data:image/png;base64,") {
		t.Errorf("imported image: %d %.100s", code, body)
	}
	if code, body := call(t, "GET", base+"/companies/1/gardens/1/beds", token, ""); code != http.StatusServiceUnavailable {
		t.Errorf("beds without a spatial server: %d %.200s", code, body)
	}

	// A sync in this process fetches a garden's point clouds into the CLI's data
	// directory and stores their positions where every node reads them.
	ds := demo.Generate(demo.Options{Seed: 2, Beds: 1, Plants: 6})
	spatialSrv := demo.NewServer(ds, demo.ServerOptions{})
	addr, err := spatialSrv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer spatialSrv.Stop()
	var c, g struct{ ID uint64 }
	_, body := call(t, "POST", base+"/companies", token, `{"name":"Farm"}`)
	json.Unmarshal(body, &c)
	_, body = call(t, "POST", fmt.Sprintf("%s/companies/%d/gardens", base, c.ID), token, `{"name":"Field"}`)
	json.Unmarshal(body, &g)
	garden := strconv.FormatUint(g.ID, 10)
	if _, err := run(t, "", "beds", "add", "--store", dsn, "--data", cli, "--garden", garden, "--uuid", ds.Beds[0].ProjectUUID); err != nil {
		t.Fatal(err)
	}
	out, err = run(t, "", "pointclouds", "sync", "--store", dsn, "--data", cli, "--garden", garden, "--spatial", addr)
	if err != nil || !strings.Contains(out, "point clouds fetched, 0 failed") {
		t.Fatalf("pointclouds sync: %v\n%s", err, out)
	}
	out, err = run(t, "", "inspect", "beds", "--store", dsn, "--data", cli)
	if err != nil || !strings.Contains(out, ds.Beds[0].ProjectUUID) {
		t.Errorf("inspect beds after the sync: %v\n%s", err, out)
	}

	// A bad --store is named, without its password.
	_, err = run(t, "", "inspect", "users", "--store", "mysql://u:secret@host/db")
	if err == nil || !strings.Contains(err.Error(), "postgres://") || strings.Contains(err.Error(), "secret") {
		t.Errorf("bad --store: %v", err)
	}
	_, err = run(t, "", "inspect", "users", "--store", "postgres://u:secret@127.0.0.1:1/db?connect_timeout=1")
	if err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("unreachable database: %v", err)
	}
}

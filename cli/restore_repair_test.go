package cli_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gardend/gardend/cli"
	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/bolt"
	"github.com/gardend/gardend/store/bolt/bolttest"
	"github.com/gardend/gardend/store/postgres"
	"github.com/gardend/gardend/store/postgres/pgtest"
)

// TestBoxWithControlCharactersMovesToCluster: a box whose bbolt file holds names
// with U+0000 and other control characters (written before gardend refused them)
// is backed up and restored into PostgreSQL, the documented move to a cluster. The
// restore loads everything, with U+FFFD where the characters stood, and names each
// repaired field; it is not refused whole (PostgreSQL cannot store U+0000).
func TestBoxWithControlCharactersMovesToCluster(t *testing.T) {
	box := t.TempDir()
	st, err := bolt.Open(filepath.Join(box, bolt.FileName), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	u, err := st.CreateUser(store.NewUser{Username: "ann", FirstName: "Ann", LastName: "Lee", Email: "ann@example.org", PasswordHash: "!"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := st.CreateCompany(u.ID, "Farm")
	if err != nil {
		t.Fatal(err)
	}
	g, err := st.CreateGarden(c.ID, "Field")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetGardenImage(g.ID, "images/a.png", store.Coordinates{
		{Name: "top_left", Latitude: 1, Longitude: 1}, {Name: "top_right", Latitude: 1, Longitude: 2},
		{Name: "bottom_left", Latitude: 0, Longitude: 1}, {Name: "x", Latitude: 0, Longitude: 0}, {Name: "x\uFFFD", Latitude: 0, Longitude: 0},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateBed(g.ID, "3fa85f64-5717-4562-b3fc-2c963f66afa6", "Bed"); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	// What an older gardend let in, written behind the store's back.
	if err := bolttest.SetFirstRecordFields(filepath.Join(box, bolt.FileName), map[string]map[string]string{
		"users":     {"first_name": "A\x00nn", "last_name": "Le\ne"},
		"companies": {"name": "Fa\x00rm"},
		"gardens":   {"name": "Fi\teld\x1b[31m"},
		"beds":      {"name": "B\x00ed"},
	}); err != nil {
		t.Fatal(err)
	}
	forgeCoordinateName(t, filepath.Join(box, bolt.FileName), 3, "x\x00")

	archive := filepath.Join(t.TempDir(), "box.tar")
	if _, err := run(t, "", "backup", "--data", box, archive); err != nil {
		t.Fatal(err)
	}
	dsn := pgtest.NewDatabase(t)
	root := cli.NewRootCommand()
	var out, errOut bytes.Buffer
	root.SetArgs([]string{"restore", archive, "--store", dsn})
	root.SetOut(&out)
	root.SetErr(&errOut)
	if err := root.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("restore of the box into PostgreSQL: %v\n%s", err, errOut.String())
	}
	warnings := errOut.String()
	for _, want := range []string{"user 1: first_name", "user 1: last_name", "company 1: name", "garden 1: name", "garden 1: coordinates[3].name", "bed 1: name"} {
		if !strings.Contains(warnings, want) {
			t.Errorf("the restore does not report %q:\n%s", want, warnings)
		}
	}
	if strings.ContainsAny(warnings, "\x00\x1b") {
		t.Errorf("the report prints control characters: %q", warnings)
	}

	pg, err := postgres.Open(context.Background(), dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pg.Close() }()
	got, err := pg.UserByID(u.ID)
	if err != nil || got.FirstName != "A\uFFFDnn" || got.LastName != "Le\uFFFDe" {
		t.Errorf("user: %+v, %v", got, err)
	}
	if got, err := pg.Company(c.ID); err != nil || got.Name != "Fa\uFFFDrm" {
		t.Errorf("company: %+v, %v", got, err)
	}
	if got, err := pg.Garden(g.ID); err != nil || got.Name != "Fi\uFFFDeld\uFFFD[31m" {
		t.Errorf("garden: %+v, %v", got, err)
	}
	_, cs, err := pg.GardenImage(g.ID)
	if err != nil || len(cs) != 5 || cs[3].Name != "x\uFFFD (2)" {
		t.Errorf("coordinates: %+v, %v (a repaired name that another has gets a suffix)", cs, err)
	}
	beds, err := pg.BedsOfGarden(g.ID)
	if err != nil || len(beds) != 1 || beds[0].Name != "B\uFFFDed" {
		t.Errorf("beds: %+v, %v", beds, err)
	}
	if err := pg.CheckIndexes(); err != nil {
		t.Error(err)
	}
}

// forgeCoordinateName renames coordinate i of garden 1.
func forgeCoordinateName(t *testing.T, path string, i int, name string) {
	t.Helper()
	err := bolttest.EditRecord(path, "garden_coords", binary.BigEndian.AppendUint64(nil, 1), func(old []byte) ([]byte, error) {
		var cs []map[string]any
		if err := json.Unmarshal(old, &cs); err != nil {
			return nil, err
		}
		cs[i]["name"] = name
		return json.Marshal(cs)
	})
	if err != nil {
		t.Fatal(err)
	}
}

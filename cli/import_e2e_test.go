package cli_test

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/server/plantmap/plantmaptest"
	"github.com/gardend/gardend/spatial/demo"
	"github.com/gardend/gardend/store/bolt"
)

// runBinary runs the built gardend with args (and stdin), outside the GARDEND_*
// environment, and returns its standard output.
func runBinary(t *testing.T, bin, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GARDEND_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("gardend %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.String()
}

type idName struct {
	ID   uint64 `json:"id"`
	Name string `json:"name"`
}

func getJSON(t *testing.T, url, token string, v any) {
	t.Helper()
	code, body := call(t, "GET", url, token, "")
	if code != 200 {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v: %s", url, err, body)
	}
}

func ids(items []idName) []uint64 {
	out := make([]uint64, len(items))
	for i, it := range items {
		out[i] = it.ID
	}
	return out
}

// TestImportPlantMapEndToEnd: a PlantMap installation (the generated one, with its
// pbkdf2_sha256, bcrypt_sha256 and argon2 hashes and a 1600×1100 JPEG picture; and the
// original project's sample data with its own picture when it is at hand), imported
// by the real binary, served by it, and found through the HTTP API: every user logs in
// with the old password (and has it rehashed to argon2id), and sees exactly the
// companies, gardens (the JPEG converted to a PNG of its size, with its coordinates),
// beds, permissions and widgets the original gave them; a site administrator sees the
// companies nobody administers.
func TestImportPlantMapEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gardend and converts a 2-megapixel image; skipped with -short")
	}
	samples := []*plantmaptest.Sample{plantmaptest.Generate(t, plantmaptest.Options{Width: 1600, Height: 1100})}
	if s, ok := plantmaptest.Original(t, plantmaptest.Options{KeepPicture: true}); ok {
		samples = append(samples, s)
	}
	for _, s := range samples {
		t.Run(s.Name, func(t *testing.T) { testImportEndToEnd(t, s) })
	}
}

func testImportEndToEnd(t *testing.T, s *plantmaptest.Sample) {
	entries := s.Entries(t)
	bin := buildGardend(t)
	dir := t.TempDir()

	// Who is who in the dump; the relations below are the original's fixtures', which
	// the generated installation repeats.
	usernames := map[int64]string{}
	widgets := map[string][]string{}
	records := 0
	var gardensWithPicture []string
	for _, e := range entries {
		if e.Model != "restapi.coordinate" {
			records++
		}
		switch e.Model {
		case "auth.user":
			usernames[mustInt(t, e.PK)] = e.Fields["username"].(string)
		case "restapi.garden":
			if e.Fields["image_path"] != "" {
				gardensWithPicture = append(gardensWithPicture, e.PK.(json.Number).String())
			}
		}
	}
	for _, e := range entries {
		if e.Model == "restapi.widget" {
			var list []string
			for _, w := range e.Fields["data"].(map[string]any)["widgets"].([]any) {
				list = append(list, w.(string))
			}
			widgets[usernames[mustInt(t, e.Fields["user"])]] = list
		}
	}

	start := time.Now()
	out := runBinary(t, bin, "", "import", "plantmap", writeDump(t, entries), "--media", s.MediaDir, "--data", dir)
	t.Logf("import took %v:\n%s", time.Since(start), out)
	wantLines(t, out, fmt.Sprintf("imported %d records in one transaction", records),
		fmt.Sprintf("image %s is a JPEG, %d×%d: converted to PNG at that size (garden %s)", s.ImageFile, s.Width, s.Height, strings.Join(gardensWithPicture, ", ")))
	runBinary(t, bin, "root-password-1\n", "admin", "create", "--username", "root", "--password-stdin", "--data", dir)

	// A spatial server that knows the dump's bed projects.
	var projects []string
	for _, e := range entries {
		if e.Model == "restapi.bed" && !slices.Contains(projects, e.Fields["uuid"].(string)) {
			projects = append(projects, e.Fields["uuid"].(string))
		}
	}
	ds := demo.Generate(demo.Options{Seed: 9, Beds: len(projects), Plants: 4})
	for i := range ds.Beds {
		ds.Beds[i].ProjectUUID = projects[i]
	}
	spatialSrv := demo.NewServer(ds, demo.ServerOptions{})
	spatialAddr, err := spatialSrv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer spatialSrv.Stop()
	p := startGardend(t, bin, dir, "--spatial", spatialAddr)
	base := p.base

	// Every user logs in with the old password, whichever hasher made their hash.
	tokens := map[string]string{}
	for pk := int64(1); pk <= int64(len(usernames)); pk++ {
		name := usernames[pk]
		code, token := login(t, base, name, s.Password)
		if code != 200 {
			t.Fatalf("login %s with the dump's password: %d", name, code)
		}
		tokens[name] = token
		var w struct{ Widgets []string }
		getJSON(t, base+"/user/widgets", token, &w)
		if !slices.Equal(w.Widgets, widgets[name]) {
			t.Errorf("%s's widgets: %v, the dump's %v", name, w.Widgets, widgets[name])
		}
	}
	first := usernames[1]
	if code, _ := login(t, base, first, s.Password); code != 200 {
		t.Fatalf("second login of %s, with the upgraded hash: %d", first, code)
	}
	if code, _ := login(t, base, first, s.Password+"5"); code != 400 {
		t.Fatalf("%s with a wrong password: %d", first, code)
	}
	_, rootToken := login(t, base, "root", "root-password-1")
	tokens["root"] = rootToken

	// Companies and gardens, as each user sees them (user pk 1 administers companies
	// 1 and 2, pk 2 reads company 1, pk 3 administers garden 3, pk 4 reads garden 4,
	// pk 5 has no permission).
	for _, tc := range []struct {
		user               string
		companies, gardens []uint64
	}{
		{usernames[1], []uint64{1, 2}, []uint64{1, 2, 3}},
		{usernames[2], []uint64{1}, []uint64{1, 2}},
		{usernames[3], nil, []uint64{3}},
		{usernames[4], nil, []uint64{4}},
		{usernames[5], nil, nil},
		{"root", []uint64{1, 2, 3, 4}, []uint64{1, 2, 3, 4}},
	} {
		var cs, gs []idName
		getJSON(t, base+"/companies", tokens[tc.user], &cs)
		getJSON(t, base+"/gardens", tokens[tc.user], &gs)
		if !slices.Equal(ids(cs), tc.companies) || !slices.Equal(ids(gs), tc.gardens) {
			t.Errorf("%s sees companies %v and gardens %v, want %v and %v", tc.user, ids(cs), ids(gs), tc.companies, tc.gardens)
		}
	}
	var cs []idName
	getJSON(t, base+"/companies", rootToken, &cs)
	var wantNames []string
	for _, e := range entries {
		if e.Model == "restapi.company" {
			wantNames = append(wantNames, e.Fields["name"].(string))
		}
	}
	var names []string
	for _, c := range cs {
		names = append(names, c.Name)
	}
	if !slices.Equal(names, wantNames) {
		t.Errorf("companies named %q, the dump's %q", names, wantNames)
	}

	// The garden image: the JPEG as a PNG of its size, with its three corners.
	wantCoords := map[uint64][]string{}
	for _, e := range entries {
		if e.Model == "restapi.coordinate" {
			g := uint64(mustInt(t, e.Fields["garden"]))
			wantCoords[g] = append(wantCoords[g], e.Fields["name"].(string)+" "+e.Fields["latitude"].(string)+" "+e.Fields["longitude"].(string))
		}
	}
	for _, g := range []struct {
		company, garden uint64
		token           string
	}{{1, 1, tokens[usernames[1]]}, {2, 3, tokens[usernames[3]]}, {4, 4, tokens[usernames[4]]}} {
		var img struct {
			Image       string
			Coordinates []struct {
				Name                string
				Latitude, Longitude json.Number
			}
		}
		getJSON(t, base+"/companies/"+u(g.company)+"/gardens/"+u(g.garden)+"/image", g.token, &img)
		data, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(img.Image, "data:image/png;base64,"))
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := png.DecodeConfig(bytes.NewReader(data))
		if err != nil || cfg.Width != s.Width || cfg.Height != s.Height {
			t.Errorf("garden %d image: %d×%d %v", g.garden, cfg.Width, cfg.Height, err)
		}
		var got []string
		for _, c := range img.Coordinates {
			got = append(got, c.Name+" "+c.Latitude.String()+" "+c.Longitude.String())
		}
		if len(got) != 3 || !slices.Equal(got, wantCoords[g.garden]) {
			t.Errorf("garden %d coordinates %v, want %v", g.garden, got, wantCoords[g.garden])
		}
	}
	if code, _ := call(t, "GET", base+"/companies/1/gardens/2/image", tokens[usernames[1]], ""); code != 404 {
		t.Errorf("garden 2 had no image; GET image: %d", code)
	}

	// Beds, through the stream, with their plants from the spatial server.
	for _, g := range []struct {
		company, garden uint64
		beds            []uint64
		token           string
	}{
		{1, 1, []uint64{1, 2, 3, 4, 5}, tokens[usernames[2]]},
		{1, 2, []uint64{6, 7, 8}, tokens[usernames[1]]},
		{2, 3, []uint64{9, 10}, tokens[usernames[3]]},
		{4, 4, []uint64{11}, tokens[usernames[4]]},
	} {
		code, body := call(t, "GET", base+"/companies/"+u(g.company)+"/gardens/"+u(g.garden)+"/beds", g.token, "")
		if code != 200 {
			t.Fatalf("beds of garden %d: %d %s", g.garden, code, body)
		}
		var got []uint64
		sc := bufio.NewScanner(bytes.NewReader(body))
		for sc.Scan() {
			var line struct {
				ID    uint64
				Plant string
				Error string
			}
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				t.Errorf("garden %d: line %q: %v", g.garden, sc.Text(), err)
			}
			if line.Error != "" || line.Plant == "" {
				t.Errorf("garden %d bed %d: %s", g.garden, line.ID, sc.Text())
			}
			got = append(got, line.ID)
		}
		if !slices.Equal(got, g.beds) {
			t.Errorf("garden %d beds %v, want %v", g.garden, got, g.beds)
		}
	}

	// Permissions, with their ids.
	for _, tc := range []struct {
		path, token string
		want        []string
	}{
		{"/companies/1/permissions", tokens[usernames[1]], []string{"1 " + usernames[1] + " a", "3 " + usernames[2] + " u"}},
		{"/companies/2/permissions", tokens[usernames[1]], []string{"2 " + usernames[1] + " a"}},
		{"/companies/2/gardens/3/permissions", tokens[usernames[3]], []string{"1 " + usernames[3] + " a"}},
		{"/companies/4/gardens/4/permissions", rootToken, []string{"2 " + usernames[4] + " u"}},
		{"/companies/3/permissions", rootToken, nil},
	} {
		var perms []struct {
			ID         uint64
			Username   string
			Permission string
		}
		getJSON(t, base+tc.path, tc.token, &perms)
		var got []string
		for _, x := range perms {
			got = append(got, u(x.ID)+" "+x.Username+" "+x.Permission)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.path, got, tc.want)
		}
	}

	// Every user who logged in now has an argon2id hash.
	p.stop()
	st, err := bolt.Open(filepath.Join(dir, bolt.FileName), bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	users, _ := st.ListUsers()
	for _, usr := range users {
		full, _ := st.UserByID(usr.ID)
		if !strings.HasPrefix(full.PasswordHash, "$argon2id$") {
			t.Errorf("%s's hash after logging in: %.20s…", usr.Username, full.PasswordHash)
		}
	}
	if err := st.CheckIndexes(); err != nil {
		t.Error(err)
	}
}

func u(v uint64) string { return strconv.FormatUint(v, 10) }

func mustInt(t *testing.T, v any) int64 {
	t.Helper()
	n, ok := v.(json.Number)
	if !ok {
		t.Fatalf("%v is not a number", v)
	}
	i, err := n.Int64()
	if err != nil {
		t.Fatal(err)
	}
	return i
}

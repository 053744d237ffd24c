package server_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"testing"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/spatial/demo"
	"github.com/gardend/gardend/store"
)

// caller is one column of the authorization matrix.
type caller int

const (
	anonymous     caller = iota // no token
	stranger                    // logged in, no permission anywhere
	companyReader               // 'u' on the company
	companyAdmin                // 'a' on the company (its creator)
	gardenReader                // 'u' on the garden only
	gardenAdmin                 // 'a' on the garden only
	otherAdmin                  // admin of another company
	siteAdmin                   // created with the CLI: admin everywhere
	numCallers
)

var callerNames = [numCallers]string{"anonymous", "stranger", "company-reader", "company-admin", "garden-reader", "garden-admin", "other-admin", "site-admin"}

// scene is one company set up with every caller's role: garden is where the garden
// members hold their permissions, sibling a garden of the same company where they hold
// none, bed a bed of garden.
type scene struct {
	company, garden, sibling, bed uint64
}

// world is a server with one user per caller and a shared scene.
type world struct {
	ts     *testServer
	tokens [numCallers]string
	other  uint64 // otherAdmin's company
	shared scene
	seq    int
	// project is a bed's project on the world's demo spatial server; scenes' beds use it.
	project string
}

// newWorldOn builds the access matrix's world on the backend b.
func newWorldOn(t *testing.T, b backend) *world {
	ds := demo.Generate(demo.Options{Seed: 1, Beds: 1, Plants: 3})
	addr := startDemoSpatial(t, ds, demo.ServerOptions{}).Addr()
	w := &world{project: ds.Beds[0].ProjectUUID, ts: newTestServerOn(t, b, func(cfg *server.Config) { cfg.Spatial.Addr = addr })}
	for c := stranger; c < siteAdmin; c++ {
		w.tokens[c] = w.ts.register(callerNames[c])
	}
	w.tokens[siteAdmin] = w.ts.siteAdmin(callerNames[siteAdmin])
	w.ts.register("target") // whose permissions the matrix creates and removes
	w.other = w.ts.createCompany(w.tokens[otherAdmin], "other").ID
	w.shared = w.newScene()
	// The shared garden has an image, for the download row.
	w.ts.must(http.StatusCreated, "POST", gardenPath(w.shared.company, w.shared.garden)+"/image", w.tokens[siteAdmin], w.imageUpload())
	return w
}

// newScene builds a company with the standard roles through the store.
func (w *world) newScene() scene {
	t := w.ts.tb
	st := w.ts.store()
	c, err := st.CreateCompany(w.ts.userID(callerNames[companyAdmin]), "company")
	if err != nil {
		t.Fatal(err)
	}
	g, err := st.CreateGarden(c.ID, "garden")
	if err != nil {
		t.Fatal(err)
	}
	sibling, err := st.CreateGarden(c.ID, "sibling")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		garden uint64
		who    caller
		level  store.Level
	}{{0, companyReader, store.LevelUser}, {g.ID, gardenReader, store.LevelUser}, {g.ID, gardenAdmin, store.LevelAdmin}} {
		if p.garden == 0 {
			_, err = st.SetCompanyPermission(c.ID, 0, callerNames[p.who], p.level)
		} else {
			_, err = st.SetGardenPermission(p.garden, 0, callerNames[p.who], p.level)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	b, err := st.CreateBed(g.ID, w.project, "")
	if err != nil {
		t.Fatal(err)
	}
	return scene{company: c.ID, garden: g.ID, sibling: sibling.ID, bed: b.ID}
}

func (w *world) uuid() string {
	w.seq++
	return fmt.Sprintf("00000000-0000-0000-0000-%012d", w.seq)
}

func (w *world) imageUpload() map[string]any {
	data, err := os.ReadFile("../testdata/images/garden.png")
	if err != nil {
		w.ts.tb.Fatal(err)
	}
	return map[string]any{
		"image":       "data:image/png;base64," + base64.StdEncoding.EncodeToString(data),
		"coordinates": cornersJSON,
	}
}

var cornersJSON = []map[string]any{
	{"name": "top_left", "latitude": 52.52, "longitude": 13.40},
	{"name": "top_right", "latitude": 52.52, "longitude": 13.41},
	{"name": "bottom_left", "latitude": 52.51, "longitude": 13.40},
}

// matrixRow is one endpoint; want holds the status for each caller, in the order of
// the caller constants.
type matrixRow struct {
	name   string
	method string
	path   func(s scene, w *world) string
	body   func(w *world) any
	// fresh rows change or delete what they address: each caller gets a new scene.
	fresh bool
	want  [numCallers]int
}

func TestAuthorizationMatrix(t *testing.T) {
	const (
		ok, created, unauth, denied, missing = 200, 201, 401, 403, 404
	)
	company := func(suffix string) func(scene, *world) string {
		return func(s scene, _ *world) string { return companyPath(s.company) + suffix }
	}
	garden := func(suffix string) func(scene, *world) string {
		return func(s scene, _ *world) string { return gardenPath(s.company, s.garden) + suffix }
	}
	fixed := func(path string) func(scene, *world) string { return func(scene, *world) string { return path } }
	// plants addresses the scene's bed under its garden, or under the sibling garden.
	plants := func(sibling bool) func(scene, *world) string {
		return func(s scene, _ *world) string {
			g := s.garden
			if sibling {
				g = s.sibling
			}
			return gardenPath(s.company, g) + "/beds/" + u64(s.bed) + "/plants"
		}
	}
	grant := func(*world) any { return map[string]string{"username": "target", "permission": "u"} }
	revoke := func(*world) any { return map[string]string{"username": "target"} }
	named := func(*world) any { return map[string]string{"name": "new"} }

	rows := []matrixRow{
		// anonymous, stranger, company-reader, company-admin, garden-reader, garden-admin, other-admin, site-admin
		{name: "list companies", method: "GET", path: fixed("/companies"),
			want: [numCallers]int{unauth, ok, ok, ok, ok, ok, ok, ok}},
		{name: "create company", method: "POST", path: fixed("/companies"), body: named,
			want: [numCallers]int{unauth, created, created, created, created, created, created, created}},
		{name: "list gardens", method: "GET", path: fixed("/gardens"),
			want: [numCallers]int{unauth, ok, ok, ok, ok, ok, ok, ok}},
		{name: "get company", method: "GET", path: company(""),
			want: [numCallers]int{unauth, missing, ok, ok, ok, ok, missing, ok}},
		{name: "delete company", method: "DELETE", path: company(""), fresh: true,
			want: [numCallers]int{unauth, missing, denied, ok, denied, denied, missing, ok}},
		{name: "list company gardens", method: "GET", path: company("/gardens"),
			want: [numCallers]int{unauth, missing, ok, ok, ok, ok, missing, ok}},
		{name: "create garden", method: "POST", path: company("/gardens"), body: named,
			want: [numCallers]int{unauth, missing, denied, created, denied, denied, missing, created}},
		{name: "get garden", method: "GET", path: garden(""),
			want: [numCallers]int{unauth, missing, ok, ok, ok, ok, missing, ok}},
		{name: "get sibling garden", method: "GET", path: func(s scene, _ *world) string { return gardenPath(s.company, s.sibling) },
			want: [numCallers]int{unauth, missing, ok, ok, missing, missing, missing, ok}},
		{name: "garden under the wrong company", method: "GET", path: func(s scene, w *world) string { return gardenPath(w.other, s.garden) },
			want: [numCallers]int{unauth, missing, missing, missing, missing, missing, missing, missing}},
		{name: "missing company", method: "GET", path: fixed("/companies/999999"),
			want: [numCallers]int{unauth, missing, missing, missing, missing, missing, missing, missing}},
		{name: "delete garden", method: "DELETE", path: garden(""), fresh: true,
			want: [numCallers]int{unauth, missing, denied, ok, denied, ok, missing, ok}},
		{name: "create company permission", method: "POST", path: company("/createPermission"), body: grant,
			want: [numCallers]int{unauth, missing, denied, created, denied, denied, missing, created}},
		{name: "remove company permission", method: "POST", path: company("/removePermission"), body: revoke,
			want: [numCallers]int{unauth, missing, denied, ok, denied, denied, missing, ok}},
		{name: "list company permissions", method: "GET", path: company("/permissions"),
			want: [numCallers]int{unauth, missing, denied, ok, denied, denied, missing, ok}},
		{name: "create garden permission", method: "POST", path: garden("/createPermission"), body: grant,
			want: [numCallers]int{unauth, missing, denied, created, denied, created, missing, created}},
		{name: "remove garden permission", method: "POST", path: garden("/removePermission"), body: revoke,
			want: [numCallers]int{unauth, missing, denied, ok, denied, ok, missing, ok}},
		{name: "list garden permissions", method: "GET", path: garden("/permissions"),
			want: [numCallers]int{unauth, missing, denied, ok, denied, ok, missing, ok}},
		{name: "upload image", method: "POST", path: garden("/image"), body: func(w *world) any { return w.imageUpload() },
			want: [numCallers]int{unauth, missing, denied, created, denied, created, missing, created}},
		{name: "download image", method: "GET", path: garden("/image"),
			want: [numCallers]int{unauth, missing, ok, ok, ok, ok, missing, ok}},
		{name: "create bed", method: "POST", path: garden("/beds"), body: func(w *world) any { return map[string]string{"uuid": w.uuid()} },
			want: [numCallers]int{unauth, missing, denied, created, denied, created, missing, created}},
		{name: "delete bed", method: "DELETE", path: func(s scene, _ *world) string { return gardenPath(s.company, s.garden) + "/beds/" + u64(s.bed) }, fresh: true,
			want: [numCallers]int{unauth, missing, denied, ok, denied, ok, missing, ok}},
		{name: "bed of the sibling garden", method: "DELETE", path: func(s scene, _ *world) string { return gardenPath(s.company, s.sibling) + "/beds/" + u64(s.bed) },
			want: [numCallers]int{unauth, missing, missing, missing, missing, missing, missing, missing}},
		{name: "list beds", method: "GET", path: garden("/beds"),
			want: [numCallers]int{unauth, missing, ok, ok, ok, ok, missing, ok}},
		{name: "list plants", method: "GET", path: plants(false),
			want: [numCallers]int{unauth, missing, ok, ok, ok, ok, missing, ok}},
		{name: "plants of a bed of the sibling garden", method: "GET", path: plants(true),
			want: [numCallers]int{unauth, missing, missing, missing, missing, missing, missing, missing}},
		{name: "malformed id", method: "GET", path: fixed("/companies/01"),
			want: [numCallers]int{unauth, missing, missing, missing, missing, missing, missing, missing}},
	}

	// The same answers whichever backend keeps the records.
	bothBackends(t, func(t *testing.T, b backend) { runMatrix(t, newWorldOn(t, b), rows) })
}

func runMatrix(t *testing.T, w *world, rows []matrixRow) {
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			for c := range numCallers {
				s := w.shared
				if row.fresh {
					s = w.newScene()
				}
				var body any
				if row.body != nil {
					body = row.body(w)
				}
				path := row.path(s, w)
				res := w.ts.do(row.method, path, w.tokens[c], body)
				if res.code != row.want[c] {
					t.Errorf("%s %s as %s: status %d, want %d; body %s", row.method, path, callerNames[c], res.code, row.want[c], res.body)
				}
			}
		})
	}
}

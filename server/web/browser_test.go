package web_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/spatial/demo"
)

// TestWebApp walks the web app in a real browser against the demo server with 30 ms
// per spatial call, as a farm worker would: log in, the garden page (stream, map,
// markers, a bed's plants), an image upload with corners, a permission grant, the 3D
// view, and a phone-sized screen. Every step ends with no console error and no request
// to another host.
func TestWebApp(t *testing.T) {
	b := newBrowser(t)
	d := startDemo(t, 30*time.Millisecond)
	garden := d.srv.DemoGardenPath() // /companies/1/gardens/1
	hash := "#/c/1/g/1"
	if garden != "/companies/1/gardens/1" {
		t.Fatalf("demo garden at %s", garden)
	}
	p := b.page(t, d.base, 1024, 600)

	t.Run("login", func(t *testing.T) {
		p.t = t
		p.do("open the app", chromedp.Navigate(d.base+"/"))
		p.waitFor("the login form", `document.querySelector('input[name=username]')`)
		// A wrong password shows the API's own words.
		p.do("log in wrongly",
			chromedp.SendKeys(chromedp.CSS(`input[name=username]`), server.DemoUsername),
			chromedp.SendKeys(chromedp.CSS(`input[name=password]`), "not-the-password"),
			chromedp.Click(chromedp.CSS(`form button[type=submit]`)))
		p.waitFor("the problem detail", `document.querySelector('.form-error .problem')`)
		var shown string
		p.eval(`document.querySelector('.form-error .problem').textContent`, &shown)
		var problem struct{ Detail string }
		res, _ := http.Post(d.base+"/login", "application/json", strings.NewReader(`{"username":"demo","password":"not-the-password"}`))
		json.NewDecoder(res.Body).Decode(&problem)
		res.Body.Close()
		if problem.Detail == "" || shown != problem.Detail {
			p.errorf("form shows %q, the API's detail is %q", shown, problem.Detail)
		}
		p.eval(`document.querySelector('input[name=password]').value = ''`, nil)
		p.login(server.DemoUsername, server.DemoPassword)
		p.checkClean("/login")
		p.waitFor("the garden's thumbnail", `document.querySelector('.garden-card .thumb img')`)
		var card string
		p.eval(`document.querySelector('.garden-card').textContent`, &card)
		if card != server.DemoGardenName {
			p.errorf("garden card %q", card)
		}
		var stored bool
		p.eval(`location.href.includes(JSON.parse(sessionStorage.getItem('gardend.session')).token)`, &stored)
		if stored {
			p.errorf("the token is in the URL")
		}
		p.checkClean()
	})

	t.Run("beds one by one", func(t *testing.T) {
		p.t = t
		// Cold cache, bed i's details held until the page shows bed i-1's line, and
		// the last bed failing: the lines come one by one, the last as an error line.
		// (Delays alone would let a stalled browser read two lines in one chunk.)
		ds := d.srv.DemoSpatialServer()
		beds := demoBeds(t, d)
		failing := beds[5].uuid
		gate := map[string]chan struct{}{}
		for _, b := range beds {
			gate[b.uuid] = make(chan struct{})
		}
		close(gate[beds[0].uuid])
		stop := make(chan struct{})
		defer close(stop) // a failed wait below must not leave calls held
		ds.SetHook(func(method, project string) (time.Duration, error) {
			g, ok := gate[project]
			if method != demo.MethodProjectDetails || !ok {
				return 0, nil
			}
			select {
			case <-g:
			case <-stop:
			}
			if project == failing {
				return 0, status.Error(codes.Internal, "broken for the test")
			}
			return 0, nil
		})
		defer ds.SetHook(nil)
		d.srv.ResetSpatialCache()
		p.eval(`window.__counts = []; new MutationObserver(() => {
			const el = document.querySelector('.progress[data-count]');
			if (el && window.__counts.at(-1) !== el.dataset.count) window.__counts.push(el.dataset.count);
		}).observe(document.body, {subtree: true, childList: true, attributes: true, characterData: true}); true`, nil)
		p.open(hash)
		for i := 1; i < len(beds); i++ {
			p.waitFor(fmt.Sprintf("bed %d's line", i), fmt.Sprintf(`+(document.querySelector('.progress[data-count]') || {dataset: {}}).dataset.count >= %d`, i))
			close(gate[beds[i].uuid])
		}
		p.waitFor("the garden drawn", `document.querySelector('main').dataset.drawn`)
		var counts []string
		p.eval(`window.__counts`, &counts)
		if strings.Join(counts, ",") != "0,1,2,3,4,5,6" && strings.Join(counts, ",") != "1,2,3,4,5,6" {
			p.errorf("progress went %v, want each of 1…6 in turn", counts)
		}
		var progress string
		p.eval(`document.querySelector('.progress').textContent`, &progress)
		if progress != "6 of 6 beds (1 could not be read)" {
			p.errorf("progress %q", progress)
		}
		var errRow string
		p.eval(`document.querySelector('.panel-beds tr.error-row').textContent`, &errRow)
		if !strings.Contains(errRow, "GetProjectDetails") || !strings.Contains(errRow, "spatial server error (Internal)") || strings.Contains(errRow, "broken for the test") || !strings.Contains(errRow, fmt.Sprint("Bed ", beds[5].id)) {
			p.errorf("error row %q", errRow)
		}
		p.checkClean()
	})

	t.Run("beds all at once", func(t *testing.T) {
		p.t = t
		p.open("#/")
		p.waitFor("home", `document.querySelector('.garden-card')`)
		p.open(hash) // warm cache: every line at once
		p.waitFor("the garden drawn", `document.querySelector('main').dataset.drawn`)
		var rows int
		p.eval(`document.querySelectorAll('.panel-beds tbody tr').length`, &rows)
		var progress string
		p.eval(`document.querySelector('.progress').textContent`, &progress)
		if rows != 6 || progress != "6 of 6 beds" {
			p.errorf("%d rows, progress %q", rows, progress)
		}
		p.checkClean()
	})

	t.Run("map", func(t *testing.T) {
		p.t = t
		// Every point cloud lands while the page waits; it draws them without a reload.
		// The downloads' pace is the server's (slow on a loaded machine); what is the
		// page's is to notice within its longest poll interval (15 s) once they are in.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := d.srv.WaitCloudsIdle(ctx); err != nil {
			t.Fatalf("the download queue did not drain: %v", err)
		}
		p.waitFor("every plant placed", `document.querySelector('main').dataset.settled === 'true'`)
		want := apiMarkers(t, d)
		var got struct{ Plants, Beds, Circles, Squares int }
		p.eval(`(() => { const m = document.querySelector('.map'); return {Plants: +m.dataset.plants, Beds: +m.dataset.beds,
			Circles: document.querySelectorAll('.map circle.plant').length, Squares: document.querySelectorAll('.map g.bed').length}; })()`, &got)
		if got.Plants != len(want.plants) || got.Circles != len(want.plants) || got.Beds != want.beds || got.Squares != want.beds {
			p.errorf("markers %+v; the API has %d plants with a position in %d beds", got, len(want.plants), want.beds)
		}
		if len(want.plants) < 150 {
			p.errorf("only %d plants with a position", len(want.plants))
		}
		checkMarkerPositions(p, want.plants)
		checkImageCorners(p, d)
		p.checkClean()
	})

	t.Run("a bed's plants", func(t *testing.T) {
		p.t = t
		bed := demoBeds(t, d)[1]
		var plants struct{ Plants []map[string]any }
		d.api(t, "GET", garden+fmt.Sprintf("/beds/%d/plants", bed.id), nil, 200, &plants)
		placed := 0
		for _, pl := range plants.Plants {
			if pl["plant_coords"] != nil {
				placed++
			}
		}
		// By keyboard: focus the bed's row and press Enter.
		p.do("select a bed by keyboard", chromedp.Focus(chromedp.CSS(fmt.Sprintf(`.panel-beds tr[data-key="%d"]`, bed.id))), chromedp.KeyEvent("\r"))
		p.waitFor("the plants table", fmt.Sprintf(`document.querySelector('#plants-h').textContent === 'Plants of Bed %d'`, bed.id))
		var got struct{ Rows, Highlighted int }
		p.eval(`({Rows: document.querySelectorAll('.panel-plants tbody tr').length, Highlighted: document.querySelectorAll('circle.plant.hl').length})`, &got)
		if got.Rows != len(plants.Plants) || got.Highlighted != placed {
			p.errorf("plants table %d rows, %d highlighted markers; the API has %d plants, %d placed", got.Rows, got.Highlighted, len(plants.Plants), placed)
		}
		// Tapping a plant shows its values.
		first := plants.Plants[0]
		key := fmt.Sprintf("%d/%s", bed.id, first["id"])
		p.do("tap a plant", chromedp.Click(chromedp.CSS(fmt.Sprintf(`circle.plant[data-key="%s"]`, key))))
		p.waitFor("the tooltip", `!document.querySelector('.map .tip').hidden`)
		var tip string
		p.eval(`document.querySelector('.map .tip').textContent`, &tip)
		if !strings.Contains(tip, fmt.Sprint(first["plant"])) || !strings.Contains(tip, fmt.Sprint(first["variety"])) || !strings.Contains(tip, "Harvest") {
			p.errorf("tooltip %q for %v", tip, first)
		}
		var hash string
		p.eval(`location.hash`, &hash)
		if hash != fmt.Sprintf("#/c/1/g/1/b/%d", bed.id) {
			p.errorf("hash %q", hash)
		}
		p.checkClean()
	})

	t.Run("image upload", func(t *testing.T) {
		p.t = t
		var before struct {
			Coordinates []struct {
				Name                string
				Latitude, Longitude float64
			}
		}
		d.api(t, "GET", garden+"/image", nil, 200, &before)
		c := map[string][2]float64{}
		for _, x := range before.Coordinates {
			c[x.Name] = [2]float64{x.Latitude, x.Longitude}
		}
		// Rotate the picture's corners by 25° about the top-left and skew it.
		corners := rotatedCorners(c["top_left"], c["top_right"], c["bottom_left"], 25, 0.15)
		file := filepath.Join(t.TempDir(), "garden.png")
		os.WriteFile(file, testPNG(240, 120), 0o644)
		p.open("#/c/1/g/1/admin")
		p.waitFor("the picture form", `document.querySelector('#picture-file') && document.querySelector('.preview-map image')`)
		waitAdminLoaded(p)
		p.do("choose the file", chromedp.SetUploadFiles(chromedp.CSS(`#picture-file`), []string{file}))
		p.waitFor("the preview", `document.querySelector('.preview-map image.preview')`)
		for _, name := range []string{"top_left", "top_right", "bottom_left"} {
			ll := corners[name]
			p.do("enter "+name,
				chromedp.SetValue(chromedp.CSS("#"+name+"-lat"), ""), chromedp.SendKeys(chromedp.CSS("#"+name+"-lat"), fmt.Sprintf("%.8f", ll[0])),
				chromedp.SetValue(chromedp.CSS("#"+name+"-lon"), ""), chromedp.SendKeys(chromedp.CSS("#"+name+"-lon"), fmt.Sprintf("%.8f", ll[1])))
		}
		p.do("save", chromedp.Click(chromedp.CSS(`.card .actions button.primary`)))
		p.waitFor("saved", `document.querySelector('#pic-h').parentElement.textContent.includes('Saved.')`)
		var after struct {
			Image       string
			Coordinates []struct {
				Name                string
				Latitude, Longitude float64
			}
		}
		d.api(t, "GET", garden+"/image", nil, 200, &after)
		if len(after.Coordinates) != 3 {
			t.Fatalf("stored coordinates %+v", after.Coordinates)
		}
		for _, x := range after.Coordinates {
			w := corners[x.Name]
			if math.Abs(x.Latitude-w[0]) > 1e-8 || math.Abs(x.Longitude-w[1]) > 1e-8 {
				p.errorf("%s stored as %v,%v, entered %v", x.Name, x.Latitude, x.Longitude, w)
			}
		}
		if !strings.HasPrefix(after.Image, "data:image/png;base64,") || len(after.Image) < 100 {
			p.errorf("stored image %q…", after.Image[:min(40, len(after.Image))])
		}
		// The garden page places the rotated, skewed picture by its corners.
		p.open(hash)
		p.waitFor("the garden drawn", `document.querySelector('main').dataset.drawn && document.querySelector('.map').dataset.image === 'shown'`)
		checkImageCorners(p, d)
		p.checkClean()
	})

	t.Run("permission grant", func(t *testing.T) {
		p.t = t
		d.api(t, "POST", "/register", map[string]string{"username": "helper", "password": "helper-password", "first_name": "H", "last_name": "P"}, 201, nil)
		p.open("#/c/1/g/1/admin")
		p.waitFor("the permissions form", `document.querySelector('#perm-garden')`)
		waitAdminLoaded(p)
		p.do("grant", chromedp.SendKeys(chromedp.CSS(`#perm-garden ~ form input[name=username]`), "helper"),
			chromedp.Click(chromedp.CSS(`#perm-garden ~ form button[type=submit]`)))
		p.waitFor("the new permission", `[...document.querySelectorAll('#perm-garden ~ .table-wrap tbody tr')].some((r) => r.dataset.key === 'helper')`)
		var perms []struct{ Username, Permission string }
		d.api(t, "GET", garden+"/permissions", nil, 200, &perms)
		if len(perms) != 1 || perms[0].Username != "helper" || perms[0].Permission != "u" {
			p.errorf("permissions %+v", perms)
		}
		// Promote to admin with the row's select.
		p.eval(`(() => { const s = document.querySelector('select[aria-label="Role of helper"]'); s.value = 'a'; s.dispatchEvent(new Event('change')); return true; })()`, nil)
		p.waitFor("promoted", `document.querySelector('select[aria-label="Role of helper"]').value === 'a' && document.getElementById('status').textContent.includes('admin')`)
		d.api(t, "GET", garden+"/permissions", nil, 200, &perms)
		if len(perms) != 1 || perms[0].Permission != "a" {
			p.errorf("after promotion %+v", perms)
		}
		p.checkClean()
	})

	t.Run("layout kept in widgets", func(t *testing.T) {
		p.t = t
		p.open("#/profile")
		p.waitFor("the layout form", `document.querySelector('input[name=legend]')`)
		p.do("hide the legend", chromedp.Click(chromedp.CSS(`input[name=legend]`)))
		p.eval(`(() => { const cb = document.querySelector('input[name=legend]'); if (cb.checked) throw new Error('still ticked'); cb.form.requestSubmit(); return true; })()`, nil)
		p.waitFor("saved", `document.body.textContent.includes('Layout saved.')`)
		var doc struct{ Widgets []string }
		d.api(t, "GET", "/user/widgets", nil, 200, &doc)
		if strings.Join(doc.Widgets, ",") != "map,beds,plants" {
			p.errorf("stored widgets %v", doc.Widgets)
		}
		p.open(hash)
		p.waitFor("the garden drawn", `document.querySelector('main').dataset.drawn`)
		var hidden bool
		p.eval(`document.querySelector('.panel-legend').hidden && !document.querySelector('.panel-map').hidden`, &hidden)
		if !hidden {
			p.errorf("the legend shows after the user hid it")
		}
		d.api(t, "POST", "/user/widgets", map[string]any{"widgets": []string{"map", "beds", "plants", "legend"}}, 201, nil)
		p.checkClean()
	})

	t.Run("3d view", func(t *testing.T) {
		p.t = t
		for _, u := range p.requested() {
			if strings.Contains(u, "/vendor/three/") {
				p.errorf("three.js loaded before the 3D view: %s", u)
			}
		}
		bed := demoBeds(t, d)[0]
		p.open(fmt.Sprintf("#/c/1/g/1/b/%d/3d", bed.id))
		p.waitFor("the clouds drawn", `+(document.querySelector('.stage') || {dataset: {}}).dataset.drawn > 0`)
		shot, err := chromedp.Run(p.ctx, chromedp.Screenshot(chromedp.CSS(`.stage canvas`)))
		if err != nil {
			p.fatalf("screenshot of the canvas: %v", err)
		}
		img, err := png.Decode(bytes.NewReader(shot))
		if err != nil {
			t.Fatal(err)
		}
		bg := color.RGBA{0xf4, 0xf1, 0xe8, 0xff}
		drawn, total := 0, 0
		var points []image.Point
		r := img.Bounds()
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				total++
				cr, cg, cb, _ := img.At(x, y).RGBA()
				if absDiff(cr>>8, uint32(bg.R))+absDiff(cg>>8, uint32(bg.G))+absDiff(cb>>8, uint32(bg.B)) > 30 {
					drawn++
					points = append(points, image.Pt(x, y))
				}
			}
		}
		if drawn*200 < total {
			p.fatalf("the 3D view is blank: %d of %d pixels differ from the background", drawn, total)
		}
		// Picking: click on the drawn pixel nearest the middle of them all.
		var mid image.Point
		for _, q := range points {
			mid = mid.Add(q)
		}
		mid = mid.Div(len(points))
		hit := points[0]
		for _, q := range points {
			if d := q.Sub(mid); d.X*d.X+d.Y*d.Y < (hit.X-mid.X)*(hit.X-mid.X)+(hit.Y-mid.Y)*(hit.Y-mid.Y) {
				hit = q
			}
		}
		var rect struct{ X, Y float64 }
		p.eval(`(() => { const r = document.querySelector('.stage canvas').getBoundingClientRect(); return {X: r.left, Y: r.top}; })()`, &rect)
		p.do("pick a plant", chromedp.MouseClickXY(rect.X+float64(hit.X-r.Min.X)+0.5, rect.Y+float64(hit.Y-r.Min.Y)+0.5))
		p.waitFor("the picked plant's values", `document.querySelector('.pick-info').dataset.plant`)
		var info string
		p.eval(`document.querySelector('.pick-info').textContent`, &info)
		if !strings.Contains(info, "Soil humidity") || !strings.Contains(info, "Health") {
			p.errorf("picked plant shows %q", info)
		}
		p.checkClean()
	})

	t.Run("phone", func(t *testing.T) {
		p.t = t
		p.open(hash)
		p.waitFor("the garden drawn", `document.querySelector('main').dataset.drawn`)
		phone := b.page(t, d.base, 390, 844)
		phone.login(server.DemoUsername, server.DemoPassword)
		phone.open(hash)
		phone.waitFor("the garden drawn", `document.querySelector('main').dataset.drawn`)
		for _, pg := range []*page{phone, p} {
			var sz struct{ Scroll, Inner, MapH int }
			pg.eval(`({Scroll: document.documentElement.scrollWidth, Inner: innerWidth, MapH: document.querySelector('.map').clientHeight})`, &sz)
			if sz.Scroll > sz.Inner || sz.MapH < 250 {
				pg.errorf("page %d px wide in a %d px window; map %d px high", sz.Scroll, sz.Inner, sz.MapH)
			}
		}
		phone.checkClean()
	})
}

type demoBed struct {
	id   uint64
	uuid string
}

// demoBeds are the demo garden's beds, in id order.
func demoBeds(t testing.TB, d *demoServer) []demoBed {
	var got struct {
		Beds []struct {
			ID   uint64
			UUID string
		}
	}
	d.api(t, "GET", d.srv.DemoGardenPath()+"/spatial-projects", nil, 200, &got)
	var out []demoBed
	for _, b := range got.Beds {
		out = append(out, demoBed{b.ID, b.UUID})
	}
	return out
}

type marker struct {
	key      string
	lat, lon float64
}

// apiMarkers reads what the map must show from the API: every plant with a position,
// and the number of beds with at least one.
func apiMarkers(t testing.TB, d *demoServer) (out struct {
	plants []marker
	beds   int
}) {
	req, _ := http.NewRequest("GET", d.base+d.srv.DemoGardenPath()+"/beds", nil)
	req.Header.Set("Authorization", "Token "+d.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		var line struct{ ID uint64 }
		json.Unmarshal(sc.Bytes(), &line)
		var plants struct {
			Plants []struct {
				ID          string
				PlantCoords *struct{ Lat, Lon float64 } `json:"plant_coords"`
			}
		}
		d.api(t, "GET", fmt.Sprintf("%s/beds/%d/plants", d.srv.DemoGardenPath(), line.ID), nil, 200, &plants)
		n := 0
		for _, p := range plants.Plants {
			if p.PlantCoords != nil {
				out.plants = append(out.plants, marker{fmt.Sprintf("%d/%s", line.ID, p.ID), p.PlantCoords.Lat, p.PlantCoords.Lon})
				n++
			}
		}
		if n > 0 {
			out.beds++
		}
	}
	return out
}

// checkMarkerPositions: each plant's marker is drawn where the map projects its
// position, within 1 px.
func checkMarkerPositions(p *page, want []marker) {
	p.t.Helper()
	type got struct{ X, Y, EX, EY float64 }
	for _, m := range want {
		var g got
		p.eval(fmt.Sprintf(`(() => { const c = document.querySelector('circle.plant[data-key="%s"]'); const r = c.getBoundingClientRect();
			const e = document.querySelector('.map').gardenMap.toScreen(%v, %v); return {X: r.left + r.width / 2, Y: r.top + r.height / 2, EX: e.x, EY: e.y}; })()`, m.key, m.lat, m.lon), &g)
		if math.Hypot(g.X-g.EX, g.Y-g.EY) > 1 {
			p.errorf("plant %s drawn at %.1f,%.1f, projects to %.1f,%.1f", m.key, g.X, g.Y, g.EX, g.EY)
			return
		}
	}
}

// checkImageCorners: the picture's corners, as the browser renders the transformed
// image, are within 2 px of where their coordinates project; and the projection keeps
// the ground's proportions (ratios of corner distances within 0.5 %).
func checkImageCorners(p *page, d *demoServer) {
	p.t.Helper()
	var doc struct {
		Coordinates []struct {
			Name                string
			Latitude, Longitude float64
		}
	}
	d.api(p.t, "GET", d.srv.DemoGardenPath()+"/image", nil, 200, &doc)
	type pt struct{ X, Y float64 }
	var got map[string]struct{ Drawn, Projected pt }
	args, _ := json.Marshal(doc.Coordinates)
	p.eval(`(() => {
		const img = document.querySelector('.map image'); const ctm = img.getScreenCTM();
		const w = +img.getAttribute('width'), h = +img.getAttribute('height');
		const at = (u, v) => { const q = new DOMPoint(u, v).matrixTransform(ctm); return {X: q.x, Y: q.y}; };
		const drawn = {top_left: at(0, 0), top_right: at(w, 0), bottom_left: at(0, h)};
		const m = document.querySelector('.map').gardenMap; const out = {};
		for (const c of `+string(args)+`) if (drawn[c.Name]) { const e = m.toScreen(c.Latitude, c.Longitude); out[c.Name] = {Drawn: drawn[c.Name], Projected: {X: e.x, Y: e.y}}; }
		return out; })()`, &got)
	if len(got) != 3 {
		p.fatalf("corners measured: %+v", got)
	}
	for name, c := range got {
		if dist := math.Hypot(c.Drawn.X-c.Projected.X, c.Drawn.Y-c.Projected.Y); dist > 2 {
			p.errorf("%s corner drawn at %.1f,%.1f, its coordinates project to %.1f,%.1f (%.1f px off)", name, c.Drawn.X, c.Drawn.Y, c.Projected.X, c.Projected.Y, dist)
		}
	}
	ground := map[string][2]float64{}
	for _, c := range doc.Coordinates {
		ground[c.Name] = [2]float64{c.Latitude, c.Longitude}
	}
	screen := func(a, b string) float64 {
		return math.Hypot(got[a].Drawn.X-got[b].Drawn.X, got[a].Drawn.Y-got[b].Drawn.Y)
	}
	r1 := screen("top_left", "top_right") / screen("top_left", "bottom_left")
	r2 := metres(ground["top_left"], ground["top_right"]) / metres(ground["top_left"], ground["bottom_left"])
	if math.Abs(r1/r2-1) > 0.005 {
		p.errorf("picture proportions on screen %.4f, on the ground %.4f", r1, r2)
	}
}

// metres is the distance between two nearby positions on the WGS84 ellipsoid (local
// curvature radii; exact enough over a garden).
func metres(a, b [2]float64) float64 {
	const A, F = 6378137.0, 1 / 298.257223563
	e2 := F * (2 - F)
	phi := (a[0] + b[0]) / 2 * math.Pi / 180
	w := 1 - e2*math.Sin(phi)*math.Sin(phi)
	m := A * (1 - e2) / math.Pow(w, 1.5)
	n := A / math.Sqrt(w)
	dn := (b[0] - a[0]) * math.Pi / 180 * m
	de := (b[1] - a[1]) * math.Pi / 180 * n * math.Cos(phi)
	return math.Hypot(dn, de)
}

// rotatedCorners turns the picture's corners by deg about the top-left and skews
// the bottom-left sideways by skew × the picture's height.
func rotatedCorners(tl, tr, bl [2]float64, deg, skew float64) map[string][2]float64 {
	k := math.Cos(tl[0] * math.Pi / 180) // degrees of longitude are shorter
	toXY := func(p [2]float64) (float64, float64) { return (p[1] - tl[1]) * k, p[0] - tl[0] }
	fromXY := func(x, y float64) [2]float64 { return [2]float64{tl[0] + y, tl[1] + x/k} }
	s, c := math.Sin(deg*math.Pi/180), math.Cos(deg*math.Pi/180)
	rot := func(x, y float64) (float64, float64) { return x*c - y*s, x*s + y*c }
	trx, try := toXY(tr)
	blx, bly := toXY(bl)
	blx += skew * math.Abs(bly)
	x1, y1 := rot(trx, try)
	x2, y2 := rot(blx, bly)
	return map[string][2]float64{"top_left": tl, "top_right": fromXY(x1, y1), "bottom_left": fromXY(x2, y2)}
}

// testPNG is a picture with a frame and a diagonal, so a wrong placement shows.
func testPNG(w, h int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c := color.RGBA{90, 150, 70, 255}
			if x < 4 || y < 4 || x >= w-4 || y >= h-4 || abs(x*h/w-y) < 2 {
				c = color.RGBA{200, 40, 40, 255}
			}
			img.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	png.Encode(&buf, img)
	return buf.Bytes()
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func absDiff(a, b uint32) uint32 {
	if a > b {
		return a - b
	}
	return b - a
}

// waitAdminLoaded waits until the garden's admin page has the first answers of its
// beds and permissions lists. Before that the grant races them: the permissions list's
// first answer (nobody) could arrive after the grant's and hide the new row (the page
// now keeps the newest answer, TestAdminListsKeepTheNewestAnswer), and both answers
// grow the page above the form by a table (287 px, ~120 ms after the form appears)
// while chromedp clicks at coordinates.
func waitAdminLoaded(p *page) {
	p.t.Helper()
	p.waitFor("the admin page's lists", `document.querySelector('main').dataset.loaded === 'true'`)
}

package server_test

import (
	"context"
	"encoding/json"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/demo"
	"github.com/gardend/gardend/store"
)

// settable is a clock tests move by hand.
type settable struct {
	mu sync.Mutex
	t  time.Time
}

func (c *settable) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *settable) Set(t time.Time)     { c.mu.Lock(); c.t = t; c.mu.Unlock() }
func (c *settable) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

type historyAnswer struct {
	Bed    uint64 `json:"bed"`
	Plant  string `json:"plant"`
	Points []struct {
		At           time.Time `json:"at"`
		SoilHumidity *float64  `json:"soil_humidity"`
		Yield        *float64  `json:"yield"`
		Harvest      string    `json:"harvest"`
		Health       []health  `json:"health"`
		Plants       *int64    `json:"plants"`
	} `json:"points"`
}

func (g *gardend) history(tb testing.TB, path, token string, q url.Values) historyAnswer {
	tb.Helper()
	var a historyAnswer
	if q != nil {
		path += "?" + q.Encode()
	}
	if err := json.Unmarshal(g.must(200, "GET", path, token, nil), &a); err != nil {
		tb.Fatal(err)
	}
	return a
}

// robotGarden is a demo garden scanned by a simulated robot, served over gRPC.
type robotGarden struct {
	ds  *demo.Dataset
	sim *demo.Simulation
	srv *demo.Server
}

func newRobotGarden(tb testing.TB, seed int64, beds, plants int) *robotGarden {
	ds := demo.Generate(demo.Options{Seed: seed, Beds: beds, Plants: plants})
	return &robotGarden{ds: ds, sim: demo.NewSimulation(ds), srv: startDemoSpatial(tb, ds, demo.ServerOptions{})}
}

// scan is the robot scanning at t: every measurement updated in place. It returns
// what a client reads then.
func (rg *robotGarden) scan(t time.Time) *demo.Dataset {
	ds := rg.sim.ScanDataset(t)
	for _, b := range ds.Beds {
		rg.srv.SetBed(b)
	}
	return ds
}

// TestHistoryOneMeasurementOnce: a robot updates every plant's measurement in place
// (same uuid, newer stamp). The beds stream records a point per plant and bed for a
// scan; the background reader reading the same scan (after a restart, so nothing
// remembered in memory saves the store from deciding) records nothing more; the
// next scan is recorded by the reader and not again by a plants request. Points
// carry the values a client read, missing ones missing.
func TestHistoryOneMeasurementOnce(t *testing.T) {
	bothBackends(t, func(t *testing.T, b backend) {
		rg := newRobotGarden(t, 11, 2, 5)
		t1 := time.Date(2026, 10, 1, 6, 0, 0, 0, time.UTC)
		clock := &settable{t: t1.Add(time.Minute)}
		g := startGardendOn(t, b, server.Config{Now: clock.Now,
			Spatial: spatial.ClientConfig{Addr: rg.srv.Addr(), Now: clock.Now},
			History: server.HistoryConfig{ScanInterval: -1}})
		token := g.register("gardener")
		f := g.gardenWithBeds(token, rg.ds.ProjectUUIDs())
		scan1 := rg.scan(t1)
		var reads []string
		var mu sync.Mutex
		g.streamBeds(f.path, token)
		g.restart()
		g.srv.Reader().OnRead(func(_ store.Bed, rec store.Recorded, err error) {
			mu.Lock()
			defer mu.Unlock()
			reads = append(reads, u64(uint64(rec.Plants)))
			if err != nil {
				t.Errorf("reader: %v", err)
			}
		})
		if err := g.srv.Reader().ReadAll(context.Background()); err != nil {
			t.Fatal(err)
		}
		t2 := t1.Add(3 * time.Hour)
		clock.Set(t2.Add(time.Minute))
		scan2 := rg.scan(t2)
		if err := g.srv.Reader().ReadAll(context.Background()); err != nil {
			t.Fatal(err)
		}
		g.must(200, "GET", f.path+"/beds/"+u64(f.beds[0])+"/plants", token, nil)
		g.streamBeds(f.path, token)
		mu.Lock()
		if got := strings.Join(reads, " "); got != "0 0 5 5" {
			t.Errorf("plants recorded per read by the reader: %s, want 0 0 5 5", got)
		}
		mu.Unlock()

		q := url.Values{"from": {"2026-09-01"}}
		for i, bed := range f.beds {
			project := rg.ds.Beds[i].ProjectUUID
			want1, _ := scan1.WantBed(project)
			want2, _ := scan2.WantBed(project)
			bh := g.history(t, f.path+"/beds/"+u64(bed)+"/history", token, q)
			if bh.Bed != bed || len(bh.Points) != 2 || !bh.Points[0].At.Equal(t1) || !bh.Points[1].At.Equal(t2) {
				t.Fatalf("bed %d history: %+v", bed, bh)
			}
			if p := bh.Points[1]; p.Plants == nil || *p.Plants != 5 {
				t.Errorf("bed point %+v", p)
			}
			sum := spatial.Summarize(want2.Plants, t2)
			if p := bh.Points[1]; !sameFloat(p.SoilHumidity, sum.SoilHumidity) || !sameFloat(p.Yield, sum.Yield) {
				t.Errorf("bed point humidity %v yield %v, want %v %v", p.SoilHumidity, p.Yield, sum.SoilHumidity, sum.Yield)
			}
			for j, p := range want1.Plants {
				ph := g.history(t, f.path+"/beds/"+u64(bed)+"/plants/"+p.ID+"/history", token, q)
				if ph.Plant != p.ID || len(ph.Points) != 2 {
					t.Fatalf("plant %s: %+v", p.ID, ph)
				}
				for k, want := range []spatial.Plant{p, want2.Plants[j]} {
					got := ph.Points[k]
					if !sameFloat(got.SoilHumidity, want.Humidity) || !sameFloat(got.Yield, want.Yield) || len(got.Health) != len(want.Health) {
						t.Errorf("plant %s point %d: %+v, want humidity %v yield %v health %v", p.ID, k, got, want.Humidity, want.Yield, want.Health)
					}
				}
			}
		}
		// Ranges: from inclusive, to inclusive (a date: that whole day); bad ones
		// named.
		bedPath := f.path + "/beds/" + u64(f.beds[0]) + "/history"
		if h := g.history(t, bedPath, token, url.Values{"from": {t2.Format(time.RFC3339)}, "to": {"2026-10-01"}}); len(h.Points) != 1 {
			t.Errorf("from t2: %d points", len(h.Points))
		}
		if h := g.history(t, bedPath, token, url.Values{"to": {t1.Format(time.RFC3339)}}); len(h.Points) != 1 {
			t.Errorf("to t1 (30 days before it): %d points", len(h.Points))
		}
		if h := g.history(t, bedPath, token, nil); len(h.Points) != 2 {
			t.Errorf("the last 30 days: %d points", len(h.Points))
		}
		for q, field := range map[string]string{"from=yesterday": "from", "to=2026-13-01": "to", "from=2026-10-02&to=2026-10-01": "to"} {
			code, body := g.call("GET", bedPath+"?"+q, token, nil)
			if code != 400 || !strings.Contains(string(body), `"`+field+`"`) {
				t.Errorf("%s: %d %s", q, code, body)
			}
		}
		// Another user sees neither the bed's history nor a plant's.
		other := g.register("stranger")
		g.must(404, "GET", bedPath, other, nil)
		g.must(404, "GET", f.path+"/beds/"+u64(f.beds[0])+"/plants/x/history", other, nil)
	})
}

func sameFloat(a, b *float64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// TestBackgroundReaderOneNode: of two nodes on one database only the one holding
// the lease reads the beds; when it stops, the other takes over.
func TestBackgroundReaderOneNode(t *testing.T) {
	rg := newRobotGarden(t, 12, 3, 3)
	rg.scan(time.Now().Add(-time.Hour))
	b := postgresBackend(t)
	cfg := server.Config{
		Spatial: spatial.ClientConfig{Addr: rg.srv.Addr(), CacheTTL: spatial.CacheDisabled},
		// A lease long enough that a loaded machine (-race, 2 cores) renews it in time:
		// at 300 ms a late renewal let the other node take over and read.
		History: server.HistoryConfig{ScanInterval: 150 * time.Millisecond, Lease: 3 * time.Second},
	}
	nodes := []*gardend{startGardendOn(t, b, cfg), startGardendOn(t, b, cfg)}
	token := nodes[0].register("gardener")
	nodes[0].gardenWithBeds(token, rg.ds.ProjectUUIDs())
	reads := func(n *gardend) int64 {
		st, _ := n.srv.SpatialStats()
		return st.Calls[mDetails]
	}
	holder := func() int {
		eventually(t, "a node holds the lease", func() bool {
			return nodes[0].srv.Reader().Holding() != nodes[1].srv.Reader().Holding()
		})
		if nodes[0].srv.Reader().Holding() {
			return 0
		}
		return 1
	}
	h := holder()
	eventually(t, "the holder reads every bed twice", func() bool { return reads(nodes[h]) >= 6 })
	if n := reads(nodes[1-h]); n != 0 {
		t.Fatalf("the node without the lease read %d beds", n)
	}
	if !nodes[h].srv.Reader().Holding() || nodes[1-h].srv.Reader().Holding() {
		t.Fatal("both or neither hold the lease")
	}
	nodes[h].halt()
	eventually(t, "the other node takes over", func() bool { return nodes[1-h].srv.Reader().Holding() })
	eventually(t, "and reads", func() bool { return reads(nodes[1-h]) >= 3 })
}

// TestAlertsAndTasks: a plant's water level at the threshold and dry soil raise
// alerts with advice for its species, most severe first, for readers of the garden
// only; a later measurement inside closes them; an admin makes a task of one (a
// reader may not), which the alert then names; new thresholds re-evaluate at once,
// and the garden's own advice replaces the built-in text.
func TestAlertsAndTasks(t *testing.T) {
	bothBackends(t, func(t *testing.T, b backend) {
		ds := demo.Generate(demo.Options{Seed: 13, Beds: 1, Plants: 3})
		bed := &ds.Beds[0]
		for _, p := range bed.Plants { // a calm bed: nothing to alert about
			m := bed.Measurements[p.MeasurementUUID]
			m["humidity"] = 0.5
			for i := range 3 {
				delete(m, "health_"+u64(uint64(i))+"_type")
				delete(m, "health_"+u64(uint64(i))+"_level")
			}
			m["health_0_type"], m["health_0_level"] = "water", int64(0)
		}
		trouble := bed.Plants[0]
		tm := bed.Measurements[trouble.MeasurementUUID]
		tm["humidity"], tm["health_0_type"], tm["health_0_level"] = 0.12, "water", int64(4)
		srv := startDemoSpatial(t, ds, demo.ServerOptions{})
		g := startGardendOn(t, b, server.Config{Now: func() time.Time { return ds.Now },
			Spatial: spatial.ClientConfig{Addr: srv.Addr(), CacheTTL: spatial.CacheDisabled},
			History: server.HistoryConfig{ScanInterval: -1}})
		admin := g.register("admin")
		f := g.gardenWithBeds(admin, ds.ProjectUUIDs())
		reader, stranger := g.register("reader"), g.register("stranger")
		g.must(201, "POST", f.path+"/createPermission", admin, map[string]string{"username": "reader", "permission": "u"})
		g.streamBeds(f.path, reader)

		type alert struct {
			ID      uint64     `json:"id"`
			Company uint64     `json:"company"`
			Garden  uint64     `json:"garden"`
			Bed     uint64     `json:"bed"`
			BedName string     `json:"bed_name"`
			Plant   string     `json:"plant"`
			Kind    string     `json:"kind"`
			Level   float64    `json:"level"`
			Since   time.Time  `json:"since"`
			Closed  *time.Time `json:"closed"`
			Advice  struct {
				Title string
				Steps []string
			} `json:"advice"`
			Task *uint64 `json:"task"`
			raw  map[string]any
		}
		list := func(path, token string) []alert {
			var a struct{ Alerts []alert }
			data := g.must(200, "GET", path, token, nil)
			decodeJSON(t, data, &a)
			var raw struct{ Alerts []map[string]any }
			decodeJSON(t, data, &raw)
			for i := range a.Alerts {
				a.Alerts[i].raw = raw.Alerts[i]
			}
			return a.Alerts
		}
		open := list(f.path+"/alerts", reader)
		if len(open) != 2 {
			t.Fatalf("open alerts %+v", open)
		}
		// Soil humidity 0.12 is 3 steps below 0.25, water 4 two above 3.
		hum, water := open[0], open[1]
		species := ""
		if in, ok := bed.Instances[trouble.InstanceUUID]; ok {
			species = in.Name
		}
		var stamp time.Time
		for _, geo := range bed.Geometries {
			if geo.UUID == trouble.MeasurementUUID {
				stamp = geo.Stamp
			}
		}
		if hum.Kind != "soil_humidity" || hum.Level != 0.12 || water.Kind != "water" || water.Level != 4 ||
			hum.Plant != trouble.MeasurementUUID || hum.Bed != f.beds[0] || hum.Garden != f.garden || hum.Company != f.company ||
			hum.BedName != bed.Name || !hum.Since.Equal(stamp) {
			t.Fatalf("alerts %+v", open)
		}
		if len(hum.Advice.Steps) < 3 || hum.Advice.Title == "" || species == "" {
			t.Errorf("advice %+v (species %q)", hum.Advice, species)
		}
		keys := slices.Sorted(maps.Keys(hum.raw))
		if got := strings.Join(keys, ","); got != "advice,bed,bed_name,company,garden,id,kind,level,plant,since" {
			t.Errorf("alert fields %s", got)
		}
		if all := list("/alerts", reader); len(all) != 2 || all[0].ID != hum.ID {
			t.Errorf("GET /alerts: %+v", all)
		}
		if none := list("/alerts", stranger); len(none) != 0 {
			t.Errorf("a stranger sees %+v", none)
		}
		g.must(404, "GET", f.path+"/alerts", stranger, nil)
		code, body := g.call("GET", f.path+"/alerts?state=shut", reader, nil)
		if code != 400 || !strings.Contains(string(body), `"state"`) {
			t.Errorf("state=shut: %d %s", code, body)
		}

		// Tasks: admins only; the alert names it; one at a time.
		taskPath := f.path + "/alerts/" + u64(water.ID) + "/task"
		g.must(403, "POST", taskPath, reader, nil)
		g.must(404, "POST", taskPath, stranger, nil)
		code, body = g.call("POST", taskPath, admin, map[string]string{"assignee": "stranger"})
		if code != 400 || !strings.Contains(string(body), `"assignee"`) {
			t.Errorf("task for someone without a role: %d %s", code, body)
		}
		var task struct {
			ID       uint64
			Type     string
			Title    string
			Notes    string
			Bed      *uint64
			Plant    *string
			Assignee *string
			At       time.Time
		}
		due := "2026-06-20T08:00:00Z"
		decodeJSON(t, g.must(201, "POST", taskPath, admin, map[string]string{"assignee": "reader", "at": due}), &task)
		if task.Type != "task" || task.Bed == nil || *task.Bed != f.beds[0] || task.Plant == nil || *task.Plant != trouble.MeasurementUUID ||
			task.Assignee == nil || *task.Assignee != "reader" || task.At.Format(time.RFC3339) != due ||
			!strings.HasPrefix(task.Title, water.Advice.Title) || !strings.Contains(task.Notes, water.Advice.Steps[0]) {
			t.Errorf("task %+v", task)
		}
		if a := list(f.path+"/alerts", reader); a[1].Task == nil || *a[1].Task != task.ID {
			t.Errorf("alert after the task %+v", a[1])
		}
		code, body = g.call("POST", taskPath, admin, nil)
		if code != 400 || !strings.Contains(string(body), "has a task already") {
			t.Errorf("a second task: %d %s", code, body)
		}

		// The garden's own advice and thresholds: the reader may not; the admin's
		// take effect at once.
		doc := map[string]any{
			"thresholds": map[string]any{"water": 5, "soil_humidity_min": 0.1},
			"advice":     map[string]any{"*": map[string]any{"water": map[string]any{"title": "Our way", "steps": []string{"Open valve 3."}}}},
		}
		g.must(403, "PUT", f.path+"/guidance", reader, doc)
		g.must(200, "PUT", f.path+"/guidance", admin, doc)
		if a := list(f.path+"/alerts", reader); len(a) != 0 {
			t.Errorf("after raising the thresholds: %+v", a)
		}
		doc["thresholds"] = map[string]any{"water": 4}
		g.must(200, "PUT", f.path+"/guidance", admin, doc)
		a := list(f.path+"/alerts", reader)
		if len(a) != 2 || a[1].Kind != "water" || a[1].Advice.Title != "Our way" || a[1].Task != nil || a[0].Kind != "soil_humidity" {
			t.Errorf("after lowering them again: %+v", a)
		}
		var got struct {
			Thresholds map[string]float64
			Advice     map[string]map[string]struct{ Title string }
		}
		decodeJSON(t, g.must(200, "GET", f.path+"/guidance", reader, nil), &got)
		if got.Thresholds["water"] != 4 || got.Thresholds["diseases"] != 2 || got.Thresholds["soil_humidity_min"] != 0.25 || got.Advice["*"]["water"].Title != "Our way" {
			t.Errorf("guidance %+v", got)
		}
		for _, tc := range []struct {
			body  any
			field string
		}{
			{map[string]any{"thresholds": map[string]any{"water": 2.5}}, "thresholds.water"},
			{map[string]any{"thresholds": map[string]any{"nutrients": 0}}, "thresholds.nutrients"},
			{map[string]any{"thresholds": "high"}, "thresholds"},
			{map[string]any{"advice": map[string]any{"tomato": map[string]any{"frost": map[string]any{"title": "t", "steps": []string{"s"}}}}}, "advice.tomato.frost"},
			{map[string]any{"advice": map[string]any{"tomato": map[string]any{"water": map[string]any{"title": 3, "steps": []string{"s"}}}}}, "advice.tomato.water.title"},
			{map[string]any{"advice": map[string]any{"tomato": map[string]any{"water": map[string]any{"title": "t", "steps": []any{"s", ""}}}}}, "advice.tomato.water.steps[1]"},
			{[]int{1}, "body"},
		} {
			code, body := g.call("PUT", f.path+"/guidance", admin, tc.body)
			if code != 400 || !strings.Contains(string(body), `"`+tc.field+`"`) {
				t.Errorf("%v: %d %s", tc.body, code, body)
			}
		}

		// The plant recovers: both alerts close and stay on record.
		scan := *bed
		scan.Measurements = map[string]map[string]any{}
		for k, v := range bed.Measurements {
			scan.Measurements[k] = v
		}
		scan.Measurements[trouble.MeasurementUUID] = map[string]any{"humidity": 0.6, "health_0_type": "water", "health_0_level": int64(0)}
		scan.Geometries = slices.Clone(bed.Geometries)
		for i, geo := range scan.Geometries {
			if geo.UUID == trouble.MeasurementUUID {
				scan.Geometries[i].Stamp = geo.Stamp.Add(time.Hour)
			}
		}
		srv.SetBed(scan)
		g.must(200, "GET", f.path+"/beds/"+u64(f.beds[0])+"/plants", reader, nil)
		if a := list(f.path+"/alerts", reader); len(a) != 0 {
			t.Errorf("open after recovery: %+v", a)
		}
		closed := list(f.path+"/alerts?state=closed", reader)
		if len(closed) != 4 {
			t.Fatalf("closed %+v", closed)
		}
		for _, c := range closed {
			if c.Closed == nil || c.raw["closed"] == nil {
				t.Errorf("closed alert without its time %+v", c)
			}
		}
	})
}

// TestDemoSeedsHistory: serve --demo starts with 60 days of history, open alerts
// with advice, and waterings in the logbook.
func TestDemoSeedsHistory(t *testing.T) {
	g := startGardend(t, server.Config{Demo: true, History: server.HistoryConfig{ScanInterval: -1}})
	var login struct{ Token string }
	decodeJSON(t, g.must(200, "POST", "/login", "", map[string]string{"username": server.DemoUsername, "password": server.DemoPassword}), &login)
	var alerts struct{ Alerts []struct{ Kind string } }
	decodeJSON(t, g.must(200, "GET", "/alerts", login.Token, nil), &alerts)
	if len(alerts.Alerts) == 0 {
		t.Fatal("the demo has no open alert")
	}
	path := g.srv.DemoGardenPath()
	beds := g.streamBeds(path, login.Token)
	h := g.history(t, path+"/beds/"+u64(beds[0].ID)+"/history", login.Token, url.Values{"from": {time.Now().Add(-61 * 24 * time.Hour).Format(time.RFC3339)}})
	if n := len(h.Points); n < 470 || n > 490 {
		t.Errorf("%d points in 60 days, want one per 3 hours", n)
	}
	var logs struct{ Logs []struct{ Title string } }
	decodeJSON(t, g.must(200, "GET", path+"/logs?type=activity&bed="+u64(beds[0].ID), login.Token, nil), &logs)
	if len(logs.Logs) < 2 || logs.Logs[0].Title != "Watered" {
		t.Errorf("logbook %+v", logs)
	}
}

// decodeJSON decodes data into v, failing the test on malformed JSON.
func decodeJSON(tb testing.TB, data []byte, v any) {
	tb.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		tb.Fatalf("decode %s: %v", data, err)
	}
}

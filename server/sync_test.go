package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/server/sitesync"
	"github.com/gardend/gardend/server/sitesync/synctest"
	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/postgres"
)

// running starts ts's Run (which runs the sync) until the test ends.
func running(t *testing.T, ts *testServer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := ts.srv.Run(ctx); err != nil {
			t.Error(err)
		}
	}()
	select {
	case <-ts.srv.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not start")
	}
	t.Cleanup(func() { cancel(); <-done })
}

// synced polls cond until it holds or 30 s pass (the sync is under way).
func synced(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 30s: %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (ts *testServer) login(username, password string) string {
	ts.tb.Helper()
	var res struct{ Token string }
	ts.must(http.StatusOK, "POST", "/login", "", map[string]string{"username": username, "password": password}).decode(ts.tb, &res)
	return res.Token
}

// TestSyncTwoBoxesOneOffice: each farm's records reach the office, the office's users
// reach both farms; a role given at farm A to an office user lets them read farm A's
// garden at the office and at farm A, and not farm B's; a write the caller could
// make at a record's home is 409 elsewhere, after 404 and 403; the office shows a
// farm's beds as of its last sync.
func TestSyncTwoBoxesOneOffice(t *testing.T) {
	pg := postgresBackend(t)
	ost, err := postgres.Open(context.Background(), pg.dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ost.Close() }()
	keys, err := sitesync.LoadKeys(ost.Secret)
	if err != nil {
		t.Fatal(err)
	}
	hub := synctest.StartHub(t, filepath.Join(t.TempDir(), "hub"), func(client, leaf, sd, rd string) (string, error) {
		return sitesync.HubConfig(keys, sitesync.HubOptions{ClientListen: client, LeafListen: leaf, StoreDir: sd, ResolverDir: rd}, nil)
	})
	office := newTestServerOn(t, pg, func(c *server.Config) { c.Addr, c.SyncHub = "127.0.0.1:0", hub.ClientURL() })
	running(t, office)
	agro := office.register("agronomist")
	box := func(name string, demo bool) *testServer {
		_, creds, err := sitesync.AddSite(ost, name)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), name+".creds")
		if err := os.WriteFile(file, creds, 0o600); err != nil {
			t.Fatal(err)
		}
		ts := newTestServer(t, func(c *server.Config) {
			c.Addr, c.SyncUplink, c.SyncCreds, c.Demo = "127.0.0.1:0", hub.LeafURL(), file, demo
		})
		running(t, ts)
		return ts
	}
	farmA, farmB := box("farm-a", true), box("farm-b", false)

	// Farm A's demo garden, and a garden at farm B.
	demoA := farmA.login(server.DemoUsername, server.DemoPassword)
	var gardensA []store.Garden
	farmA.must(http.StatusOK, "GET", "/gardens", demoA, nil).decode(t, &gardensA)
	gA := gardensA[0]
	bobB := farmB.register("bob")
	cB := farmB.createCompany(bobB, "Farm B")
	gB := farmB.createGarden(bobB, cB.ID, "B field")

	// Farm A joins with the demo's 60 days of history: let the office catch up (a
	// matter of throughput, which the sitesync tests measure) before the checks.
	caughtUp := time.Now().Add(2 * time.Minute)
	for {
		stats, err := farmA.store().ChangeStats()
		if err == nil && stats.On && stats.Records == 0 {
			break
		}
		if time.Now().After(caughtUp) {
			t.Fatalf("farm A's backlog after 2 minutes: %+v, %v", stats, err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// The office's agronomist reaches both farms; farm A gives them a role.
	for _, farm := range []*testServer{farmA, farmB} {
		synced(t, "the agronomist at a farm", func() bool {
			_, err := farm.store().UserByUsername("agronomist")
			return err == nil
		})
	}
	farmA.must(http.StatusCreated, "POST", gardenPath(gA.Company, gA.ID)+"/createPermission", demoA,
		map[string]string{"username": "agronomist", "permission": "u"})
	// The beds of farm A's demo garden, read there: their values go to the office.
	farmA.must(http.StatusOK, "GET", gardenPath(gA.Company, gA.ID)+"/beds", demoA, nil)

	gAo := store.Garden{ID: store.GlobalID(2, gA.ID), Company: store.GlobalID(2, gA.Company)}
	gBo := store.Garden{ID: store.GlobalID(3, gB.ID), Company: store.GlobalID(3, gB.Company)}
	synced(t, "farm A's role for the agronomist at the office", func() bool {
		return office.do("GET", gardenPath(gAo.Company, gAo.ID), agro, nil).code == http.StatusOK
	})
	synced(t, "farm B's garden at the office", func() bool {
		_, err := office.store().Garden(gBo.ID)
		return err == nil
	})
	// Farm A's garden at the office and at farm A; not farm B's.
	office.must(http.StatusNotFound, "GET", gardenPath(gBo.Company, gBo.ID), agro, nil)
	agroA := farmA.login("agronomist", "pw-of-agronomist")
	farmA.must(http.StatusOK, "GET", gardenPath(gA.Company, gA.ID), agroA, nil)
	agroB := farmB.login("agronomist", "pw-of-agronomist")
	farmB.must(http.StatusNotFound, "GET", gardenPath(gB.Company, gB.ID), agroB, nil)

	// The beds at the office, as of farm A's last read, without a spatial server.
	synced(t, "farm A's bed values at the office", func() bool {
		vs, err := office.store().BedValuesOfGarden(gAo.ID)
		beds, _ := farmA.store().BedsOfGarden(gA.ID)
		return err == nil && len(beds) > 0 && len(vs) == len(beds)
	})
	res := office.must(http.StatusOK, "GET", gardenPath(gAo.Company, gAo.ID)+"/beds", agro, nil)
	sc := bufio.NewScanner(bytes.NewReader(res.body))
	lines := 0
	var firstBed uint64
	for sc.Scan() {
		var line struct {
			ID   uint64     `json:"id"`
			AsOf *time.Time `json:"as_of"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		if lines == 0 {
			firstBed = line.ID
		}
		lines++
		if line.AsOf == nil || store.HomeSite(line.ID) != 2 {
			t.Errorf("bed line at the office: %s", sc.Bytes())
		}
	}
	if lines == 0 {
		t.Fatal("no beds at the office")
	}
	var plants struct {
		Plants []map[string]any `json:"plants"`
		AsOf   *time.Time       `json:"as_of"`
	}
	office.must(http.StatusOK, "GET", gardenPath(gAo.Company, gAo.ID)+"/beds/"+u64(firstBed)+"/plants", agro, nil).decode(t, &plants)
	if plants.AsOf == nil || len(plants.Plants) == 0 {
		t.Errorf("plants at the office: %+v", plants)
	}

	// History, alerts and guidance: farm A's guidance raises alerts there; the
	// office answers the same bed history, alerts and guidance, ids mapped.
	bedA := firstBed & (1<<40 - 1)
	farmA.must(http.StatusOK, "PUT", gardenPath(gA.Company, gA.ID)+"/guidance", demoA, map[string]any{
		"thresholds": map[string]any{"water": 2, "nutrients": 2, "diseases": 1, "soil_humidity_min": 0.3}, "advice": map[string]any{}})
	type alert struct {
		ID, Company, Garden, Bed uint64
		Task                     *uint64
		Plant                    string
		Kind                     string
		Level                    float64
		Since                    time.Time
	}
	type alerts struct{ Alerts []alert }
	var answerA alerts
	farmA.must(http.StatusOK, "GET", gardenPath(gA.Company, gA.ID)+"/alerts", demoA, nil).decode(t, &answerA)
	alertsA := answerA.Alerts
	if len(alertsA) == 0 {
		t.Fatal("farm A's guidance raised no alert")
	}
	for i, a := range alertsA {
		alertsA[i].ID, alertsA[i].Company, alertsA[i].Garden, alertsA[i].Bed =
			store.GlobalID(2, a.ID), store.GlobalID(2, a.Company), store.GlobalID(2, a.Garden), store.GlobalID(2, a.Bed)
	}
	var alertsO []alert
	synced(t, "farm A's alerts at the office", func() bool {
		var answerO alerts
		office.must(http.StatusOK, "GET", gardenPath(gAo.Company, gAo.ID)+"/alerts", agro, nil).decode(t, &answerO)
		alertsO = answerO.Alerts
		return len(alertsO) == len(alertsA)
	})
	if !reflect.DeepEqual(alertsO, alertsA) {
		t.Errorf("alerts at the office:\n%+v\nat farm A, ids mapped:\n%+v", alertsO, alertsA)
	}
	guidanceA := farmA.must(http.StatusOK, "GET", gardenPath(gA.Company, gA.ID)+"/guidance", demoA, nil).body
	if guidanceO := office.must(http.StatusOK, "GET", gardenPath(gAo.Company, gAo.ID)+"/guidance", agro, nil).body; !bytes.Equal(guidanceO, guidanceA) {
		t.Errorf("guidance at the office: %s\nat farm A: %s", guidanceO, guidanceA)
	}
	var histA, histO struct {
		Bed    uint64
		Points []map[string]any
	}
	farmA.must(http.StatusOK, "GET", gardenPath(gA.Company, gA.ID)+"/beds/"+u64(bedA)+"/history", demoA, nil).decode(t, &histA)
	if len(histA.Points) == 0 {
		t.Fatal("no history at farm A")
	}
	synced(t, "the bed's history at the office", func() bool {
		histO.Points = nil
		office.must(http.StatusOK, "GET", gardenPath(gAo.Company, gAo.ID)+"/beds/"+u64(firstBed)+"/history", agro, nil).decode(t, &histO)
		return len(histO.Points) == len(histA.Points)
	})
	if histO.Bed != firstBed || !reflect.DeepEqual(histO.Points, histA.Points) {
		t.Errorf("the bed's history at the office: bed %d, %v\nat farm A: %v", histO.Bed, histO.Points, histA.Points)
	}

	// Writes: 404 and 403 first, then 409 naming the home.
	demoO := office.login(server.DemoUsername, server.DemoPassword) // farm A's admin, replicated
	wantHome := func(res response, what string) {
		t.Helper()
		if res.code != http.StatusConflict {
			t.Fatalf("%s: %d %s, want 409", what, res.code, res.body)
		}
		if detail, _ := res.problem(t); !strings.Contains(detail, "is managed at site farm-a; change it there") {
			t.Errorf("%s: %q", what, detail)
		}
	}
	wantHome(office.do("DELETE", companyPath(gAo.Company), demoO, nil), "delete farm A's company at the office")
	wantHome(office.do("POST", companyPath(gAo.Company)+"/gardens", demoO, map[string]string{"name": "x"}), "a garden in it")
	wantHome(office.do("POST", gardenPath(gAo.Company, gAo.ID)+"/createPermission", demoO,
		map[string]string{"username": "agronomist", "permission": "a"}), "a role in it")
	wantHome(office.do("PUT", "/user", demoO, map[string]string{"first_name": "Renamed"}), "the farm's user renamed at the office")
	wantHome(office.do("PUT", gardenPath(gAo.Company, gAo.ID)+"/guidance", demoO, map[string]any{}), "the farm's guidance at the office")
	if res := office.do("DELETE", gardenPath(gAo.Company, gAo.ID), agro, nil); res.code != http.StatusForbidden {
		t.Errorf("a reader deletes a replica garden: %d, want 403", res.code)
	}
	stranger := office.register("stranger")
	if res := office.do("DELETE", gardenPath(gAo.Company, gAo.ID), stranger, nil); res.code != http.StatusNotFound {
		t.Errorf("a stranger deletes a replica garden: %d, want 404", res.code)
	}
	res = farmA.do("PUT", "/user", agroA, map[string]string{"first_name": "Renamed"})
	if detail, _ := res.problem(t); res.code != http.StatusConflict || !strings.Contains(detail, "is managed at site office") {
		t.Errorf("the agronomist renamed at farm A: %d %s", res.code, detail)
	}
	// The logbook: a task given at farm A to the office's agronomist, and the
	// agronomist's observation there, reach the office; there they are read, listed
	// among the agronomist's tasks, and written only at their home.
	logsA, logsO := gardenPath(gA.Company, gA.ID)+"/logs", gardenPath(gAo.Company, gAo.ID)+"/logs"
	var task, seen store.Log
	farmA.must(http.StatusCreated, "POST", logsA, demoA,
		map[string]string{"type": "task", "title": "Scout for aphids", "assignee": "agronomist"}).decode(t, &task)
	farmA.must(http.StatusCreated, "POST", logsA, agroA, map[string]string{"type": "observation", "title": "Aphids on the north bed"}).decode(t, &seen)
	seenO := u64(store.GlobalID(2, seen.ID))
	synced(t, "farm A's logs at the office", func() bool {
		return office.do("GET", logsO+"/"+seenO, agro, nil).code == http.StatusOK
	})
	var tasks struct{ Tasks []store.Log }
	office.must(http.StatusOK, "GET", "/tasks", agro, nil).decode(t, &tasks)
	if len(tasks.Tasks) != 1 || tasks.Tasks[0].ID != store.GlobalID(2, task.ID) || tasks.Tasks[0].Author != server.DemoUsername {
		t.Errorf("the agronomist's tasks at the office: %+v", tasks)
	}
	wantHome(office.do("PUT", logsO+"/"+seenO, agro, map[string]string{"title": "Ladybirds"}), "the agronomist's log edited at the office")
	wantHome(office.do("DELETE", logsO+"/"+seenO, agro, nil), "the agronomist's log deleted at the office")
	wantHome(office.do("POST", logsO, agro, map[string]string{"type": "observation", "title": "x"}), "a log of farm A's garden at the office")
	if res := office.do("POST", logsO, agro, map[string]string{"type": "task", "title": "x"}); res.code != http.StatusForbidden {
		t.Errorf("a reader makes a task at the office: %d, want 403", res.code)
	}
	if res := office.do("PUT", logsO+"/"+seenO, stranger, map[string]string{"title": "x"}); res.code != http.StatusNotFound {
		t.Errorf("a stranger edits a replica log: %d, want 404", res.code)
	}
	// Its photos: the agronomist's photo at farm A reaches the office, which serves
	// it and its thumbnail as farm A does, and takes or deletes photos of the log
	// only at its home.
	var ph struct{ ID uint64 }
	farmA.send("POST", logsA+"/"+u64(seen.ID)+"/photos", agroA, "image/jpeg", phonePhoto(t, 640, 480)).decode(t, &ph)
	photoA, photoO := logsA+"/"+u64(seen.ID)+"/photos/"+u64(ph.ID), logsO+"/"+seenO+"/photos/"+u64(store.GlobalID(2, ph.ID))
	synced(t, "farm A's photo at the office", func() bool {
		var l store.Log
		res := office.do("GET", logsO+"/"+seenO, agro, nil)
		return res.code == http.StatusOK && json.Unmarshal(res.body, &l) == nil && len(l.Photos) == 1 && l.Photos[0] == store.GlobalID(2, ph.ID)
	})
	for _, size := range []string{"full", "thumb"} {
		home, here := farmA.do("GET", photoA+"?size="+size, agroA, nil), office.do("GET", photoO+"?size="+size, agro, nil)
		if here.code != http.StatusOK || home.code != http.StatusOK || !bytes.Equal(here.body, home.body) ||
			here.header.Get("Content-Type") != home.header.Get("Content-Type") {
			t.Errorf("the photo's %s at the office: %d, %d bytes; at farm A: %d, %d bytes", size, here.code, len(here.body), home.code, len(home.body))
		}
	}
	if res := office.send("POST", logsO+"/"+seenO+"/photos", agro, "image/jpeg", phonePhoto(t, 64, 48)); res.code != http.StatusConflict {
		t.Errorf("a photo added at the office: %d %s, want 409", res.code, res.body)
	} else {
		wantHome(res, "a photo added at the office")
	}
	wantHome(office.do("DELETE", photoO, agro, nil), "the photo deleted at the office")
	if res := office.do("DELETE", photoO, stranger, nil); res.code != http.StatusNotFound {
		t.Errorf("a stranger deletes a replica photo: %d, want 404", res.code)
	}
	// Edited and deleted at its home: so at the office.
	farmA.must(http.StatusOK, "PUT", logsA+"/"+u64(task.ID), agroA, map[string]string{"status": "done"})
	farmA.must(http.StatusOK, "DELETE", logsA+"/"+u64(seen.ID), agroA, nil)
	synced(t, "the log's deletion and the task done at the office", func() bool {
		var tasks struct{ Tasks []store.Log }
		office.must(http.StatusOK, "GET", "/tasks", agro, nil).decode(t, &tasks)
		return office.do("GET", logsO+"/"+seenO, agro, nil).code == http.StatusNotFound && len(tasks.Tasks) == 0
	})
	if paths, err := office.store().PhotoPaths(); err != nil || len(paths) != 0 {
		t.Errorf("photo content left at the office after the log's deletion: %v, %v", paths, err)
	}

	// At its home, the same write works, and reaches the office.
	farmA.must(http.StatusOK, "PUT", "/user", demoA, map[string]string{"first_name": "Renamed"})
	synced(t, "the rename at the office", func() bool {
		u, err := office.store().UserByUsername(server.DemoUsername)
		return err == nil && u.FirstName == "Renamed"
	})
}

// TestSyncUplinkDown: a box whose hub cannot be reached is ready and serves, and
// says so in its metrics; a server without an uplink starts no NATS server and
// records no changes.
func TestSyncUplinkDown(t *testing.T) {
	keys, err := sitesync.LoadKeys(func(string, int) ([]byte, error) { return bytes.Repeat([]byte{7}, 32), nil })
	if err != nil {
		t.Fatal(err)
	}
	creds, _, err := keys.SiteCreds(5, "farm-e")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "e.creds")
	if err := os.WriteFile(file, creds, 0o600); err != nil {
		t.Fatal(err)
	}
	box := newTestServer(t, func(c *server.Config) {
		c.Addr, c.MetricsAddr = "127.0.0.1:0", "127.0.0.1:0"
		c.SyncUplink, c.SyncCreds = "nats-leaf://127.0.0.1:1", file // nothing listens there
	})
	running(t, box)
	box.must(http.StatusOK, "GET", "/readyz", "", nil)
	token := box.register("farmer")
	box.createCompany(token, "Farm E")
	fam := scrape(t, http.DefaultClient, "http://"+box.srv.MetricsAddr()+"/metrics")
	for name, want := range map[string]float64{"gardend_sync_connected": 0, "gardend_sync_backlog_records": 3} {
		if f := fam[name]; f == nil || value(f.Metric[0]) != want {
			t.Errorf("%s = %v, want %v", name, f, want)
		}
	}
	if f := fam["gardend_sync_oldest_unsent_timestamp_seconds"]; f == nil || value(f.Metric[0]) <= 0 {
		t.Errorf("gardend_sync_oldest_unsent_timestamp_seconds = %v", f)
	}

	plain := newTestServer(t)
	plain.createCompany(plain.register("alice"), "A")
	if _, err := os.Stat(filepath.Join(plain.cfg.DataDir, "nats")); err == nil {
		t.Error("a server without an uplink made a NATS directory")
	}
	if st, err := plain.store().ChangeStats(); err != nil || st.On || st.Records != 0 {
		t.Errorf("a server without an uplink records changes: %+v, %v", st, err)
	}
}

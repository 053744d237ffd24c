package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/server/pointcloud"
	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/demo"
	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/postgres"
	"github.com/gardend/gardend/store/postgres/pgtest"
)

// Several gardend nodes on one PostgreSQL database, in this process: each its own
// Server with its own data directory and connection pool, as behind a proxy. What one
// node writes, the others read at once; no node keeps what another may change.

// cluster is n nodes on one fresh database.
func cluster(t *testing.T, n int, configure ...func(*server.Config)) []*testServer {
	t.Helper()
	b := postgresBackend(t)
	nodes := make([]*testServer, n)
	for i := range nodes {
		nodes[i] = newTestServerOn(t, b, configure...)
	}
	return nodes
}

// TestClusterSharesEverything: a write on one node is read on the others at once; a
// token from one works on all; logging out on one revokes everywhere; a permission
// change takes effect on every node; an image uploaded through one is served by all.
func TestClusterSharesEverything(t *testing.T) {
	nodes := cluster(t, 3)
	a, b, c := nodes[0], nodes[1], nodes[2]
	// Every node claims its (empty) data directory for the one database, so that its
	// sweeps run.
	id, _, err := a.store().DataID()
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range nodes {
		if marker, _ := os.ReadFile(filepath.Join(n.cfg.DataDir, server.DataIDFile)); strings.TrimSpace(string(marker)) != id {
			t.Errorf("node %d: %s holds %q, want %q", i, server.DataIDFile, marker, id)
		}
	}

	ann := a.register("ann")
	var me struct{ Username, First_name string }
	b.must(http.StatusOK, "GET", "/user", ann, nil).decode(t, &me)
	if me.Username != "ann" {
		t.Fatalf("ann's token on another node: %+v", me)
	}
	// A change of the account on one node shows on the others at once: no node
	// caches users.
	c.must(http.StatusOK, "PUT", "/user", ann, map[string]string{"first_name": "Annie"})
	a.must(http.StatusOK, "GET", "/user", ann, nil).decode(t, &me)
	if me.First_name != "Annie" {
		t.Errorf("node a reads %+v after the change on node c", me)
	}

	company := c.createCompany(ann, "Allotments")
	var listed []store.Company
	a.must(http.StatusOK, "GET", "/companies", ann, nil).decode(t, &listed)
	if len(listed) != 1 || listed[0].ID != company.ID {
		t.Fatalf("node a lists %+v right after node c created %+v", listed, company)
	}
	garden := b.createGarden(ann, company.ID, "Plot 7")

	// A permission granted on one node lets the user in on another; revoked on a
	// third, it shuts them out everywhere.
	bob := b.register("bob")
	c.must(http.StatusNotFound, "GET", gardenPath(company.ID, garden.ID), bob, nil)
	a.grant(ann, company.ID, garden.ID, "bob", store.LevelUser)
	c.must(http.StatusOK, "GET", gardenPath(company.ID, garden.ID), bob, nil)
	b.must(http.StatusOK, "POST", gardenPath(company.ID, garden.ID)+"/removePermission", ann, map[string]string{"username": "bob"})
	for i, n := range nodes {
		if res := n.do("GET", gardenPath(company.ID, garden.ID), bob, nil); res.code != http.StatusNotFound {
			t.Errorf("node %d after the revocation: %d, want 404", i, res.code)
		}
	}

	// An image uploaded through one node is served by every node, byte for byte.
	png, err := os.ReadFile("../testdata/images/garden.png")
	if err != nil {
		t.Fatal(err)
	}
	upload := map[string]any{"image": "data:image/png;base64," + base64.StdEncoding.EncodeToString(png), "coordinates": cornersJSON}
	a.must(http.StatusCreated, "POST", gardenPath(company.ID, garden.ID)+"/image", ann, upload)
	for i, n := range nodes {
		var img struct{ Image string }
		n.must(http.StatusOK, "GET", gardenPath(company.ID, garden.ID)+"/image", ann, nil).decode(t, &img)
		got, err := base64.StdEncoding.DecodeString(img.Image[len("data:image/png;base64,"):])
		if err != nil || !bytes.Equal(got, png) {
			t.Errorf("node %d serves %d bytes (%v), want the %d uploaded", i, len(got), err, len(png))
		}
	}
	// No node keeps image files: the bytes are in the database.
	for i, n := range nodes {
		if entries, _ := os.ReadDir(n.cfg.DataDir + "/" + server.ImageDirName); len(entries) != 0 {
			t.Errorf("node %d keeps %d image files", i, len(entries))
		}
	}

	// Logging out on one node ends the token on all; logging out everywhere on
	// another ends the rest.
	var login struct{ Token string }
	b.must(http.StatusOK, "POST", "/login", "", map[string]string{"username": "ann", "password": "pw-of-ann"}).decode(t, &login)
	c.must(http.StatusOK, "POST", "/logout", login.Token, nil)
	for i, n := range nodes {
		if res := n.do("GET", "/user", login.Token, nil); res.code != http.StatusUnauthorized {
			t.Errorf("node %d accepts a token logged out on node c: %d", i, res.code)
		}
	}
	a.must(http.StatusOK, "GET", "/user", ann, nil)
	b.must(http.StatusOK, "POST", "/logoutall", ann, nil)
	for i, n := range nodes {
		if res := n.do("GET", "/user", ann, nil); res.code != http.StatusUnauthorized {
			t.Errorf("node %d accepts a token after a logout everywhere: %d", i, res.code)
		}
	}
}

// TestClusterLastAdminRule: admins on different nodes demoting each other, removing
// each other and granting admin at the same moment never leave the company without
// an admin, round after round.
func TestClusterLastAdminRule(t *testing.T) {
	nodes := cluster(t, 3)
	const admins, rounds = 4, 6
	owner := nodes[0].register("owner")
	company := nodes[0].createCompany(owner, "Roofs")
	tokens := make([]string, admins)
	names := make([]string, admins)
	for i := range tokens {
		names[i] = fmt.Sprintf("admin%d", i)
		tokens[i] = nodes[i%len(nodes)].register(names[i])
	}
	path := companyPath(company.ID)
	refused := 0
	for round := range rounds {
		// Everyone is admin again (the owner is no admin: the others are the set).
		for _, name := range names {
			nodes[0].must(http.StatusCreated, "POST", path+"/createPermission", owner, map[string]string{"username": name, "permission": "a"})
		}
		nodes[1].must(http.StatusOK, "POST", path+"/removePermission", tokens[0], map[string]string{"username": "owner"})

		// Each admin, on its own node, takes the admin letter from the next one or
		// removes them at the same moment; in odd rounds some grant it to a third
		// instead. When every one of them takes, one must be refused.
		start := make(chan struct{})
		var wg sync.WaitGroup
		codes := make([]int, admins)
		for i := range admins {
			target := names[(i+1)%admins]
			wg.Go(func() {
				n := nodes[(i+round)%len(nodes)]
				<-start
				switch {
				case round%2 == 1 && i%2 == 1:
					codes[i] = n.do("POST", path+"/createPermission", tokens[i], map[string]string{"username": names[(i+2)%admins], "permission": "a"}).code
				case i%2 == 0:
					codes[i] = n.do("POST", path+"/createPermission", tokens[i], map[string]string{"username": target, "permission": "u"}).code
				default:
					codes[i] = n.do("POST", path+"/removePermission", tokens[i], map[string]string{"username": target}).code
				}
			})
		}
		close(start)
		wg.Wait()
		done := 0
		for _, code := range codes {
			switch code {
			case http.StatusOK, http.StatusCreated:
				done++
			case http.StatusForbidden, http.StatusNotFound:
				// The last admin, or one no longer admin (or member) by the time
				// their own change ran.
				refused++
			default:
				t.Fatalf("round %d: answers %v", round, codes)
			}
		}
		if round%2 == 0 && done == admins {
			t.Errorf("round %d: every admin took the letter from another, and all succeeded: %v", round, codes)
		}

		perms, err := nodes[2].store().CompanyPermissions(company.ID)
		if err != nil {
			t.Fatal(err)
		}
		left := 0
		for _, p := range perms {
			if p.Level == store.LevelAdmin {
				left++
			}
		}
		if left == 0 {
			t.Fatalf("round %d: the company has no admin: %+v", round, perms)
		}
		if err := nodes[1].store().CheckIndexes(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		// An admin left (whoever it is) brings the owner back for the next round.
		i := slices.IndexFunc(names, func(name string) bool {
			return slices.ContainsFunc(perms, func(p store.Permission) bool { return p.Username == name && p.Level == store.LevelAdmin })
		})
		nodes[i%len(nodes)].must(http.StatusCreated, "POST", path+"/createPermission", tokens[i], map[string]string{"username": "owner", "permission": "a"})
	}
	t.Logf("%d changes refused in %d rounds (the last admin, or one no longer admin)", refused, rounds)
}

// TestPostgresRestartUnderLoad: PostgreSQL stops under load and starts again. While it
// is down every request ends within the operation timeout with a 503 that says to try
// again (no hang, no other error); once it is back, requests succeed again with no
// restart of gardend, and nothing is left half-written.
func TestPostgresRestartUnderLoad(t *testing.T) {
	pg := pgtest.StartServer(t)
	dsn := pg.NewDatabase(t)
	const opTimeout = time.Second
	open := func() store.Backend {
		st, err := postgres.Open(context.Background(), dsn, postgres.Options{OpTimeout: opTimeout})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	nodes := []*testServer{
		newTestServer(t, func(c *server.Config) { c.Store = open() }),
		newTestServer(t, func(c *server.Config) { c.Store = open() }),
	}
	token := nodes[0].register("ann")
	company := nodes[1].createCompany(token, "Roofs")

	type outcome struct {
		code  int
		took  time.Duration
		retry string
	}
	var (
		mu       sync.Mutex
		outcomes []outcome
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			n := nodes[i%len(nodes)]
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				var res response
				if k%4 == 3 {
					res = n.do("POST", companyPath(company.ID)+"/gardens", token, map[string]string{"name": fmt.Sprintf("g%d-%d", i, k)})
				} else {
					res = n.do("GET", "/user", token, nil)
				}
				mu.Lock()
				outcomes = append(outcomes, outcome{res.code, time.Since(start), res.header.Get("Retry-After")})
				mu.Unlock()
			}
		})
	}
	since := func(from int) []outcome {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(outcomes[from:])
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(outcomes) }
	waitFor := func(what string, ok func([]outcome) bool) int {
		t.Helper()
		from := count()
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if got := since(from); ok(got) {
				return from
			}
			time.Sleep(50 * time.Millisecond) // polling the load's outcomes
		}
		t.Fatalf("%s: not within 20s", what)
		return 0
	}
	codes := func(want int) func([]outcome) bool {
		return func(got []outcome) bool {
			n := 0
			for _, o := range got {
				if o.code == want {
					n++
				}
			}
			return n >= 20
		}
	}

	waitFor("load running", codes(http.StatusOK))
	pg.Stop(t)
	down := waitFor("503s while PostgreSQL is down", codes(http.StatusServiceUnavailable))
	downAt := count()
	pg.Start(t)
	up := waitFor("200s again after PostgreSQL is back", func(got []outcome) bool {
		// Twenty successes in a row: the nodes recovered, not one lucky request.
		run := 0
		for _, o := range got {
			if o.code == http.StatusOK || o.code == http.StatusCreated {
				run++
			} else {
				run = 0
			}
		}
		return run >= 20
	})
	close(stop)
	wg.Wait()

	all := since(0)
	var slowest time.Duration
	unavailable := 0
	for i, o := range all {
		slowest = max(slowest, o.took)
		switch o.code {
		case http.StatusOK, http.StatusCreated:
		case http.StatusServiceUnavailable:
			unavailable++
			if o.retry == "" {
				t.Errorf("request %d: 503 without Retry-After", i)
			}
		default:
			t.Errorf("request %d: status %d (only 200, 201 and 503 are expected)", i, o.code)
		}
	}
	// A request runs at most one operation timeout per store call it makes (a write
	// makes two: authenticate, then write), plus scheduling on a busy machine.
	if bound := 3*opTimeout + time.Second; slowest > bound {
		t.Errorf("the slowest request took %v, more than %v", slowest, bound)
	}
	t.Logf("%d requests: %d answered 503 while PostgreSQL was down (from request %d to %d, back at %d); slowest %v",
		len(all), unavailable, down, downAt, up, slowest)
	for _, n := range nodes {
		if err := n.store().CheckIndexes(); err != nil {
			t.Error(err)
		}
	}
}

// TestClusterDownloadQueue: three nodes asked for the same garden at once queue its
// point clouds once and work them off together: every cloud is downloaded by exactly
// one node (kept in that node's cache only) and its position stored once, and every
// node then lists the same positions. A node without a cloud's file fetches it when
// the 3D scene or a signed URL handed out by another node asks for it.
func TestClusterDownloadQueue(t *testing.T) {
	ds := demo.Generate(demo.Options{Seed: 7, Beds: 3, Plants: 8})
	so := startDemoSpatial(t, ds, demo.ServerOptions{})
	b := postgresBackend(t)
	nodes := make([]*gardend, 3)
	for i := range nodes {
		nodes[i] = startGardendOn(t, b, server.Config{
			Now:     func() time.Time { return ds.Now },
			Spatial: spatial.ClientConfig{Addr: so.Addr(), CallTimeout: 5 * time.Second},
			// Nodes look at the shared queue often, so that all take part in a short test.
			Clouds: pointcloud.Config{Poll: 20 * time.Millisecond},
		})
	}
	token := nodes[0].register("gardener")
	farm := nodes[0].gardenWithBeds(token, ds.ProjectUUIDs())
	// Downloads take a while, so that all three nodes have some in hand.
	so.SetHook(func(method, _ string) (time.Duration, error) {
		if method == mCloud {
			return 50 * time.Millisecond, nil
		}
		return 0, nil
	})
	so.ResetStats()
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Go(func() { n.streamBeds(farm.path, token) })
	}
	wg.Wait()
	for _, n := range nodes {
		n.waitClouds()
	}

	clouds := 0
	perProject := map[string]int{}
	for _, bed := range ds.Beds {
		st, err := nodes[1].srv.Store().CloudState(bed.ProjectUUID)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Jobs) != 0 {
			t.Errorf("project %s: %d jobs left", bed.ProjectUUID, len(st.Jobs))
		}
		clouds += len(st.Positions)
		perProject[bed.ProjectUUID] = len(st.Positions)
	}
	fetched := so.Stats().Calls[mCloud]
	kept, keptBy := 0, 0
	for _, n := range nodes {
		if c := countFiles(t, filepath.Join(n.cfg.DataDir, pointcloud.DirName)); c > 0 {
			kept += c
			keptBy++
		}
	}
	t.Logf("%d clouds: %d downloads, kept by %d nodes", clouds, fetched, keptBy)
	if clouds == 0 || fetched != int64(clouds) || kept != clouds {
		t.Fatalf("%d positions stored, %d downloads, %d files kept; want one download and one file per position", clouds, fetched, kept)
	}
	if keptBy < 2 {
		t.Errorf("one node downloaded every cloud: the others claimed nothing")
	}
	for i, n := range nodes {
		lines := n.streamBeds(farm.path, token)
		for j, l := range lines {
			if _, positions := expectPositions(t, ds, ds.Beds[j].ProjectUUID); countSet(positions) != len(l.PlantCoords) {
				t.Errorf("node %d, bed %d: %d plant positions listed, want %d", i, l.ID, len(l.PlantCoords), countSet(positions))
			}
		}
	}

	// The 3D scene on a node lists the clouds it keeps and fetches the others in the
	// background; a signed URL another node handed out is served by fetching it.
	so.ResetStats()
	scene := func(n *gardend, bed uint64) []string {
		var sc struct{ Plants []struct{ URL string } }
		json.Unmarshal(n.must(200, "GET", farm.path+"/beds/"+u64(bed)+"/3d-scene/", token, nil), &sc)
		var urls []string
		for _, p := range sc.Plants {
			urls = append(urls, p.URL)
		}
		return urls
	}
	bed, plants := farm.beds[0], perProject[ds.Beds[0].ProjectUUID]
	urls := scene(nodes[0], bed)
	eventually(t, "node 0 keeps every cloud of the bed", func() bool { return len(scene(nodes[0], bed)) == plants })
	for _, u := range urls[:min(3, len(urls))] {
		res, err := http.Get(nodes[2].base + strings.TrimPrefix(u, nodes[0].base))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !bytes.HasPrefix(body, []byte("ply\n")) {
			t.Errorf("node 2 serving node 0's signed URL: %d %.80s", res.StatusCode, body)
		}
	}
	if n := so.Stats().Calls[mCloud]; n > int64(2*plants) {
		t.Errorf("%d downloads to keep %d clouds on two more nodes", n, plants)
	}
}

func countFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && !strings.HasPrefix(d.Name(), ".") {
			n++
		}
		return nil
	})
	return n
}

func countSet[T any](ps []*T) int {
	n := 0
	for _, p := range ps {
		if p != nil {
			n++
		}
	}
	return n
}

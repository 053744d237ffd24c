package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gardend/gardend/server"
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

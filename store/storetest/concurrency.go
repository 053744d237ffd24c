package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gardend/gardend/store"
)

// Concurrency tests start their operations together on a barrier and spread them over
// the nodes; whatever order the backend runs them in, the rules must hold. (The
// PostgreSQL backend's own tests also force the worst interleavings with hooks.)

// together runs each fn in its own goroutine, released at once, and waits for all.
func together(fns ...func()) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, fn := range fns {
		wg.Go(func() {
			<-start
			fn()
		})
	}
	close(start)
	wg.Wait()
}

// testLastAdminConcurrentDemotions: a company's k admins are all demoted or removed
// at once, each by another of them; exactly one stays admin.
func testLastAdminConcurrentDemotions(t *testing.T, h Harness) {
	nodes, _ := openNodes(t, h, 2)
	const k, rounds = 4, 8
	var admins []store.User
	for i := range k {
		admins = append(admins, mustUser(t, nodes[0], fmt.Sprintf("admin%d", i)))
	}
	for round := range rounds {
		c := mustCompany(t, nodes[0], admins[0], fmt.Sprintf("c%d", round))
		for _, a := range admins[1:] {
			if _, err := nodes[0].SetCompanyPermission(c.ID, admins[0].ID, a.Username, store.LevelAdmin); err != nil {
				t.Fatal(err)
			}
		}
		errs := make([]error, k)
		var fns []func()
		for i, a := range admins {
			st := nodes[i%len(nodes)]
			actor := admins[(i+1)%k].ID
			fns = append(fns, func() {
				if i%2 == 0 {
					_, errs[i] = st.RemoveCompanyPermission(c.ID, actor, a.Username)
				} else {
					_, errs[i] = st.SetCompanyPermission(c.ID, actor, a.Username, store.LevelUser)
				}
			})
		}
		together(fns...)
		refused := 0
		for i, err := range errs {
			switch {
			case errors.Is(err, store.ErrForbidden):
				refused++
			case err != nil:
				t.Fatalf("round %d, demotion %d: %v", round, i, err)
			}
		}
		perms, err := nodes[1].CompanyPermissions(c.ID)
		if err != nil {
			t.Fatal(err)
		}
		var left []string
		for _, p := range perms {
			if p.Level == store.LevelAdmin {
				left = append(left, p.Username)
			}
		}
		if refused != 1 || len(left) != 1 {
			t.Fatalf("round %d: %d demotions refused, admins left %v; want 1 and one admin", round, refused, left)
		}
	}
}

// testConcurrentGrantsAndDemotions mixes grants and demotions of one company's
// members on two nodes: the company never ends without an admin, a refusal is always
// the last-admin rule, and the final levels agree with what each call reported.
func testConcurrentGrantsAndDemotions(t *testing.T, h Harness) {
	nodes, _ := openNodes(t, h, 2)
	const members, rounds = 4, 6
	owner := mustUser(t, nodes[0], "owner")
	var users []store.User
	for i := range members {
		users = append(users, mustUser(t, nodes[0], fmt.Sprintf("m%d", i)))
	}
	for round := range rounds {
		c := mustCompany(t, nodes[0], owner, fmt.Sprintf("c%d", round))
		var (
			mu      sync.Mutex
			outcome = map[string][]string{}
			fns     []func()
		)
		record := func(who, what string, err error) {
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				outcome[who] = append(outcome[who], what)
			case errors.Is(err, store.ErrForbidden):
				outcome[who] = append(outcome[who], "refused")
			default:
				t.Errorf("round %d, %s %s: %v", round, what, who, err)
			}
		}
		// The operator (actor 0) grants admin to each member and then demotes them
		// again, while the owner's own admin letter is taken away at the same time.
		for i, u := range users {
			st := nodes[i%len(nodes)]
			fns = append(fns, func() {
				_, err := st.SetCompanyPermission(c.ID, 0, u.Username, store.LevelAdmin)
				record(u.Username, "granted", err)
				_, err = st.SetCompanyPermission(c.ID, 0, u.Username, store.LevelUser)
				record(u.Username, "demoted", err)
			})
		}
		fns = append(fns, func() {
			_, err := nodes[1].SetCompanyPermission(c.ID, 0, owner.Username, store.LevelUser)
			record(owner.Username, "demoted", err)
		})
		together(fns...)

		perms, err := nodes[0].CompanyPermissions(c.ID)
		if err != nil {
			t.Fatal(err)
		}
		admins := 0
		for _, p := range perms {
			if p.Level == store.LevelAdmin {
				admins++
			}
			got := outcome[p.Username]
			// A member whose demotion was refused stayed admin; one demoted is "u".
			wantAdmin := slices.Contains(got, "refused") || p.Username == owner.Username && len(got) == 0
			if (p.Level == store.LevelAdmin) != wantAdmin {
				t.Errorf("round %d: %s is %q after %v", round, p.Username, p.Level, got)
			}
		}
		if admins != 1 {
			t.Errorf("round %d: %d admins, want exactly 1 (every demotion but the last admin's succeeds): %+v %v", round, admins, perms, outcome)
		}
	}
}

// testConcurrentBedsOfOneProject deletes the last bed of a project while another
// node creates a bed for it: either the deletion dropped the project (and its
// positions) before the new bed, or the new bed kept them; never half of it.
func testConcurrentBedsOfOneProject(t *testing.T, h Harness) {
	nodes, _ := openNodes(t, h, 2)
	alice := mustUser(t, nodes[0], "alice")
	c := mustCompany(t, nodes[0], alice, "c")
	g1, g2 := mustGarden(t, nodes[0], c, "g1"), mustGarden(t, nodes[0], c, "g2")
	for round := range 8 {
		old, err := nodes[0].CreateBed(g1.ID, uuidA, "")
		if err != nil {
			t.Fatal(err)
		}
		if err := nodes[0].CompleteCloudJob(store.PlantPosition{Project: uuidA, Cloud: "c1", CloudInputs: inputsMap, Position: &store.LatLon{}}); err != nil {
			t.Fatal(err)
		}
		var (
			r             store.Removed
			fresh         store.Bed
			errDel, errCr error
		)
		together(
			func() { r, errDel = nodes[0].DeleteBed(g1.ID, old.ID) },
			func() { fresh, errCr = nodes[1].CreateBed(g2.ID, uuidA, "") },
		)
		if errDel != nil || errCr != nil {
			t.Fatalf("round %d: delete %v, create %v", round, errDel, errCr)
		}
		state, err := nodes[1].CloudState(uuidA)
		if err != nil {
			t.Fatal(err)
		}
		dropped := slices.Equal(r.BedUUIDs, []string{uuidA})
		if dropped == (len(state.Positions) == 1) {
			t.Fatalf("round %d: deletion reported %v, positions left %d", round, r.BedUUIDs, len(state.Positions))
		}
		if _, err := nodes[0].DeleteBed(g2.ID, fresh.ID); err != nil {
			t.Fatal(err)
		}
	}
}

// testNodesSeeEachOthersWrites: what one node writes, another reads at once — a token,
// a rename, a password change that revokes tokens, a permission.
func testNodesSeeEachOthersWrites(t *testing.T, h Harness) {
	nodes, clock := openNodes(t, h, 2)
	n1, n2 := nodes[0], nodes[1]
	ann := mustUser(t, n1, "ann")
	d := store.TokenDigest(tok("ann"))
	if err := n1.CreateToken(ann.ID, d, clock.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if u, err := n2.Authenticate(d); err != nil || u.Username != "ann" {
		t.Fatalf("token from node 1 on node 2: %+v, %v", u, err)
	}
	if _, err := n1.UpdateUser(ann.ID, store.UserUpdate{Username: ptr("anna")}); err != nil {
		t.Fatal(err)
	}
	if u, err := n2.Authenticate(d); err != nil || u.Username != "anna" {
		t.Fatalf("node 2 after a rename on node 1: %+v, %v", u, err)
	}
	if err := n2.RevokeToken(d); err != nil {
		t.Fatal(err)
	}
	_, err := n1.Authenticate(d)
	wantErr(t, err, store.ErrUnauthenticated)

	bob := mustUser(t, n2, "bob")
	c := mustCompany(t, n1, ann, "c")
	if _, a, _ := n2.CompanyAccess(c.ID, bob.ID); a.Company != "" {
		t.Fatalf("bob holds %q before the grant", a.Company)
	}
	if _, err := n1.SetCompanyPermission(c.ID, ann.ID, "bob", store.LevelAdmin); err != nil {
		t.Fatal(err)
	}
	if _, a, _ := n2.CompanyAccess(c.ID, bob.ID); a.Company != store.LevelAdmin {
		t.Fatalf("node 2 sees %q after the grant on node 1", a.Company)
	}
	d2 := store.TokenDigest(tok("bob"))
	if err := n2.CreateToken(bob.ID, d2, clock.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := n1.UpdateUser(bob.ID, store.UserUpdate{PasswordHash: ptr("changed")}); err != nil {
		t.Fatal(err)
	}
	_, err = n2.Authenticate(d2)
	wantErr(t, err, store.ErrUnauthenticated)
}

package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/store"
)

// TestRegisterProjectOfAnotherGarden: knowing a bed's project uuid (every reader sees
// it) is not enough to register it in a garden of one's own: a reader whose
// permission was removed would go on reading the bed's plants and clouds there. Only
// someone who administers every garden the project is a bed of, or a site admin,
// registers it elsewhere; the refusal says why. Before, any user could.
func TestRegisterProjectOfAnotherGarden(t *testing.T) {
	bothBackends(t, func(t *testing.T, b backend) {
		ts := newTestServerOn(t, b, func(c *server.Config) { c.SpatialProjects = server.SpatialProjectsSiteAdmins })
		const project = "3fa85f64-5717-4562-b3fc-2c963f66afa6"
		alice, bob := ts.register("alice"), ts.register("bob")
		c := ts.createCompany(alice, "farm")
		g := ts.createGarden(alice, c.ID, "field")
		ts.must(http.StatusCreated, "POST", gardenPath(c.ID, g.ID)+"/beds", alice, map[string]string{"uuid": project})
		ts.grant(alice, c.ID, g.ID, "bob", store.LevelUser)

		bc := ts.createCompany(bob, "bob's")
		own := ts.createGarden(bob, bc.ID, "own")
		register := func(token string, companyID, gardenID uint64) response {
			return ts.do("POST", gardenPath(companyID, gardenID)+"/beds", token, map[string]string{"uuid": project})
		}
		refused := func(what string, res response) {
			t.Helper()
			detail, fields := res.problem(t)
			if res.code != http.StatusForbidden || !strings.Contains(detail, "already a bed of a garden you do not administer") ||
				!strings.Contains(detail, project) || fields["uuid"] == "" {
				t.Errorf("%s: %d %s %v", what, res.code, detail, fields)
			}
		}
		refused("a reader", register(bob, bc.ID, own.ID))
		ts.must(http.StatusOK, "POST", gardenPath(c.ID, g.ID)+"/removePermission", alice, map[string]string{"username": "bob"})
		refused("a former reader", register(bob, bc.ID, own.ID))
		if beds, _ := ts.store().BedsOfProject(project); len(beds) != 1 {
			t.Fatalf("beds of the project after the refusals: %+v", beds)
		}

		// An admin of the garden may, in a garden of their own; so may a site admin.
		ts.grant(alice, c.ID, g.ID, "bob", store.LevelAdmin)
		if res := register(bob, bc.ID, own.ID); res.code != http.StatusCreated {
			t.Fatalf("an admin of the garden: %d %s", res.code, res.body)
		}
		// Now bob's garden has it too: alice administers only one of the two.
		ag := ts.createGarden(alice, c.ID, "orchard")
		refused("an admin of one of two gardens", register(alice, c.ID, ag.ID))
		root := ts.siteAdmin("root")
		if res := register(root, c.ID, ag.ID); res.code != http.StatusCreated {
			t.Fatalf("a site admin: %d %s", res.code, res.body)
		}
	})
}

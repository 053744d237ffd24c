package spatial_test

import (
	"context"
	"errors"
	"sort"
	"testing"

	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/demo"
)

// TestProjects: every project of the server, sorted by name, uncached; a server that
// is down is ErrUnavailable.
func TestProjects(t *testing.T) {
	ds := dataset(3)
	srv := startDemo(t, ds, demo.ServerOptions{})
	c := dial(t, srv.Addr(), spatial.ClientConfig{})
	var want []spatial.Project
	for _, b := range ds.Beds {
		want = append(want, spatial.Project{UUID: b.ProjectUUID, Name: b.Name})
	}
	sort.Slice(want, func(i, j int) bool { return want[i].Name < want[j].Name })
	for range 2 {
		got, err := c.Projects(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("got %v, want %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("project %d: %+v, want %+v", i, got[i], want[i])
			}
		}
	}
	if n := srv.Stats().Calls["/seerep.MetaOperations/GetProjects"]; n != 2 {
		t.Errorf("%d GetProjects calls, want 2 (not cached)", n)
	}

	srv.Stop()
	_, err := c.Projects(context.Background())
	if !errors.Is(err, spatial.ErrUnavailable) {
		t.Fatalf("server stopped: %v, want ErrUnavailable", err)
	}
}

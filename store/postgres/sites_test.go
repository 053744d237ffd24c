package postgres_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/gardend/gardend/store"
)

// TestSites: the office's register numbers sites from 2, lowest free first, names
// once (removed ones too); removal keeps the row; reports and leases follow the rules.
func TestSites(t *testing.T) {
	nodes := openNodes(t, nil, 2)
	a, b := nodes[0], nodes[1]
	defer func() { _ = a.Close(); _ = b.Close() }()
	// Concurrent registrations get distinct numbers.
	var wg sync.WaitGroup
	got := make([]store.Site, 6)
	errs := make([]error, 6)
	for i := range got {
		wg.Go(func() {
			got[i], errs[i] = nodes[i%2].CreateSite("farm-"+string(rune('a'+i)), "U"+string(rune('A'+i)))
		})
	}
	wg.Wait()
	seen := map[uint32]bool{}
	for i, s := range got {
		if errs[i] != nil || s.Number < 2 || s.Number > 7 || seen[s.Number] {
			t.Fatalf("site %d: %+v, %v", i, s, errs[i])
		}
		seen[s.Number] = true
	}
	for _, bad := range []string{"office", "Farm", "farm_a", "", "1farm"} {
		if _, err := a.CreateSite(bad, "U"); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("CreateSite(%q) = %v, want ErrInvalid", bad, err)
		}
	}
	if _, err := a.CreateSite("farm-a", "U"); !errors.Is(err, store.ErrConflict) {
		t.Errorf("a name twice: %v", err)
	}
	removed, err := a.RemoveSite("farm-c")
	if err != nil || removed.Removed == nil {
		t.Fatalf("RemoveSite = %+v, %v", removed, err)
	}
	if _, err := a.RemoveSite("office"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RemoveSite(office) = %v", err)
	}
	if _, err := a.CreateSite("farm-c", "U"); !errors.Is(err, store.ErrConflict) {
		t.Errorf("a removed site's name again: %v", err)
	}
	sites, err := b.Sites()
	if err != nil || len(sites) != 6 {
		t.Fatalf("Sites = %d, %v", len(sites), err)
	}
	next, err := a.CreateSite("farm-z", "UZ")
	if err != nil || next.Number != 8 {
		t.Errorf("next site: %+v, %v", next, err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := a.ReportSite(next.Number, store.SiteReport{At: at, BacklogRecords: 7, BacklogBytes: 700}); err != nil {
		t.Fatal(err)
	}
	sites, _ = b.Sites()
	last := sites[len(sites)-1]
	if last.LastContact == nil || !last.LastContact.Equal(at) || last.BacklogRecords != 7 || last.BacklogBytes != 700 {
		t.Errorf("reported site: %+v", last)
	}
	// One node holds a lease until it lapses; a removed site has none.
	if ok, err := a.LeaseSite(next.Number, "n1", time.Minute); err != nil || !ok {
		t.Fatalf("first lease: %v, %v", ok, err)
	}
	if ok, _ := b.LeaseSite(next.Number, "n2", time.Minute); ok {
		t.Error("a second node took a held lease")
	}
	if ok, _ := a.LeaseSite(next.Number, "n1", time.Millisecond); !ok {
		t.Error("the holder could not renew")
	}
	time.Sleep(20 * time.Millisecond)
	if ok, _ := b.LeaseSite(next.Number, "n2", time.Minute); !ok {
		t.Error("a lapsed lease was not taken over")
	}
	if ok, _ := a.LeaseSite(removed.Number, "n1", time.Minute); ok {
		t.Error("a removed site was leased")
	}
	// The office's own row leases the sending of its records.
	if ok, _ := a.LeaseSite(store.OfficeSite, "n1", time.Minute); !ok {
		t.Error("the office's lease")
	}
}

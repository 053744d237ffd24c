package sitesync

import (
	"fmt"
	"slices"

	"github.com/gardend/gardend/store"
)

// diff lists how the office's replicas of site differ from the box's records (ids
// mapped): nothing when the office holds exactly the box's records.
func diff(box, office store.Backend, site uint32) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	g := func(id uint64) uint64 { return store.GlobalID(site, id) }
	homed := func(id uint64) bool { return store.HomeSite(id) == site }
	// A user is known at the office by its id there: an office user's replica at
	// the box by its office id.
	atOffice := func(user uint64) uint64 { return store.LocalID(store.OfficeSite, g(user)) }

	busers, err1 := box.ListUsers()
	ousers, err2 := office.ListUsers()
	if err1 != nil || err2 != nil {
		return []string{fmt.Sprint(err1, err2)}
	}
	n := 0
	for _, u := range ousers {
		if homed(u.ID) {
			n++
		}
	}
	local := 0
	for _, u := range busers {
		if !store.IsLocal(u.ID) {
			continue
		}
		local++
		bu, _ := box.UserByID(u.ID)
		ou, err := office.UserByID(g(u.ID))
		if err != nil {
			bad("user %d: %v", u.ID, err)
			continue
		}
		if ou.FirstName != bu.FirstName || ou.LastName != bu.LastName || ou.Email != bu.Email ||
			ou.PasswordHash != bu.PasswordHash || !ou.DateJoined.Equal(bu.DateJoined) {
			bad("user %d: %+v at the office, %+v at the box", u.ID, ou, bu)
		}
	}
	if n != local {
		bad("%d users of the site at the office, %d at the box", n, local)
	}

	bcs, err1 := box.Companies()
	ocs, err2 := office.Companies()
	if err1 != nil || err2 != nil {
		return []string{fmt.Sprint(err1, err2)}
	}
	var want, got []store.Company
	for _, c := range bcs {
		want = append(want, store.Company{ID: g(c.ID), Name: c.Name})
	}
	for _, c := range ocs {
		if homed(c.ID) {
			got = append(got, c)
		}
	}
	if !slices.Equal(want, got) {
		bad("companies: %d at the office, %d at the box", len(got), len(want))
	}

	bgs, err1 := box.Gardens()
	ogs, err2 := office.Gardens()
	if err1 != nil || err2 != nil {
		return []string{fmt.Sprint(err1, err2)}
	}
	ogByID := map[uint64]store.Garden{}
	for _, og := range ogs {
		if homed(og.ID) {
			ogByID[og.ID] = og
		}
	}
	if len(ogByID) != len(bgs) {
		bad("gardens: %d at the office, %d at the box", len(ogByID), len(bgs))
	}
	for _, bg := range bgs {
		og, ok := ogByID[g(bg.ID)]
		if !ok || og.Name != bg.Name || og.Company != g(bg.Company) || (og.ImagePath == nil) != (bg.ImagePath == nil) {
			bad("garden %d: %+v at the office", bg.ID, og)
			continue
		}
		if bg.ImagePath != nil {
			_, bcs, _ := box.GardenImage(bg.ID)
			_, ocs, err := office.GardenImage(og.ID)
			if err != nil || !slices.Equal(bcs, ocs) {
				bad("garden %d: picture coordinates differ (%v)", bg.ID, err)
			}
		}
		bl, err1 := allLogs(box, bg.ID)
		ol, err2 := allLogs(office, og.ID)
		if err1 != nil || err2 != nil {
			bad("garden %d: logs: %v, %v", bg.ID, err1, err2)
		} else if len(bl) != len(ol) {
			bad("garden %d: %d logs at the office, %d at the box", bg.ID, len(ol), len(bl))
		} else {
			for i := range bl {
				want, got := store.ArchivedLogOf(bl[i]), store.ArchivedLogOf(ol[i])
				want.ID, want.Garden, want.AuthorID = g(want.ID), g(want.Garden), atOffice(want.AuthorID)
				if want.AssigneeID != 0 {
					want.AssigneeID = atOffice(want.AssigneeID)
				}
				wantBed, gotBed := uint64(0), uint64(0)
				if want.Bed != nil {
					wantBed = g(*want.Bed)
				}
				if got.Bed != nil {
					gotBed = *got.Bed
				}
				want.Bed, got.Bed = nil, nil // compared by value, not by pointer
				if fmt.Sprint(want) != fmt.Sprint(got) || wantBed != gotBed {
					bad("log %d: %+v at the office, %+v wanted", bl[i].ID, got, want)
				}
			}
		}
		bv, _ := box.BedValuesOfGarden(bg.ID)
		ov, _ := office.BedValuesOfGarden(og.ID)
		if len(bv) != len(ov) {
			bad("garden %d: %d bed values at the office, %d at the box", bg.ID, len(ov), len(bv))
		}
		out = append(out, diffAlerts(box, office, bg, og, g, atOffice)...)
	}
	out = append(out, diffHistory(box, office, g)...)

	bbs, err1 := box.Beds()
	obs, err2 := office.Beds()
	if err1 != nil || err2 != nil {
		return []string{fmt.Sprint(err1, err2)}
	}
	var wantBeds, gotBeds []store.Bed
	for _, b := range bbs {
		wantBeds = append(wantBeds, store.Bed{ID: g(b.ID), Garden: g(b.Garden), UUID: b.UUID, Name: b.Name})
	}
	for _, b := range obs {
		if homed(b.ID) {
			gotBeds = append(gotBeds, b)
		}
	}
	if !slices.Equal(wantBeds, gotBeds) {
		bad("beds: %d at the office, %d at the box", len(gotBeds), len(wantBeds))
	}

	bp, err1 := box.ListPermissions()
	op, err2 := office.ListPermissions()
	if err1 != nil || err2 != nil {
		return []string{fmt.Sprint(err1, err2)}
	}
	type perm struct {
		on, user, id uint64
		level        store.Level
	}
	var wantP, gotP []perm
	for _, p := range bp.Company {
		wantP = append(wantP, perm{g(p.Company), atOffice(p.UserID), g(p.ID), p.Level})
	}
	for _, p := range bp.Garden {
		wantP = append(wantP, perm{g(p.Garden) | 1<<62, atOffice(p.UserID), g(p.ID), p.Level})
	}
	for _, p := range op.Company {
		if homed(p.Company) {
			gotP = append(gotP, perm{p.Company, p.UserID, p.ID, p.Level})
		}
	}
	for _, p := range op.Garden {
		if homed(p.Garden) {
			gotP = append(gotP, perm{p.Garden | 1<<62, p.UserID, p.ID, p.Level})
		}
	}
	cmp := func(a, b perm) int {
		if c := cmpUint(a.on, b.on); c != 0 {
			return c
		}
		return cmpUint(a.user, b.user)
	}
	slices.SortFunc(wantP, cmp)
	slices.SortFunc(gotP, cmp)
	if !slices.Equal(wantP, gotP) {
		bad("permissions: %v at the office, %v at the box", gotP, wantP)
	}
	return out
}

// allLogs lists every log of the garden, page after page.
func allLogs(st store.Backend, garden uint64) ([]store.Log, error) {
	var out []store.Log
	f := store.LogFilter{Limit: store.MaxLogPage}
	for {
		page, err := st.ListLogs(garden, f)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Logs...)
		if page.Next == nil {
			return out, nil
		}
		f.After = page.Next
	}
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

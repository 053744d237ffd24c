package sitesync

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"slices"

	"github.com/gardend/gardend/store"
)

// diff lists how the office's replicas of site differ from the box's records (ids
// mapped): nothing when the office holds exactly the box's records. Photos' bytes
// are compared by digest, the box's in boxPhotos.
func diff(box, office store.Backend, site uint32, boxPhotos store.PhotoContent) []string {
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
				for _, problem := range diffPhotos(box, office, boxPhotos, bl[i], ol[i], g, atOffice) {
					bad("log %d: %s", bl[i].ID, problem)
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

// diffPhotos lists how the photos of the office's replica of a log differ from the
// box's: records, and bytes (picture and thumbnail) by digest.
func diffPhotos(box, office store.Backend, boxPhotos store.PhotoContent, bl, ol store.Log, g, atOffice func(uint64) uint64) []string {
	var out []string
	want := make([]uint64, len(bl.Photos))
	for i, id := range bl.Photos {
		want[i] = g(id)
	}
	if !slices.Equal(want, ol.Photos) {
		return []string{fmt.Sprintf("photos %v at the office, %v wanted", ol.Photos, want)}
	}
	officePhotos, ok := office.(store.PhotoContent)
	if !ok || boxPhotos == nil {
		return []string{"no photo content to compare"}
	}
	for i, id := range bl.Photos {
		bp, err1 := box.Photo(bl.Garden, bl.ID, id)
		op, err2 := office.Photo(ol.Garden, ol.ID, ol.Photos[i])
		if err1 != nil || err2 != nil {
			out = append(out, fmt.Sprintf("photo %d: %v, %v", id, err1, err2))
			continue
		}
		if op.ContentType != bp.ContentType || op.Width != bp.Width || op.Height != bp.Height || op.Size != bp.Size ||
			op.ThumbSize != bp.ThumbSize || op.Uploader != atOffice(bp.Uploader) || !op.Created.Equal(bp.Created) ||
			(op.ThumbPath == "") != (bp.ThumbPath == "") {
			out = append(out, fmt.Sprintf("photo %d: %+v at the office, %+v at the box", id, op, bp))
			continue
		}
		paths := [][2]string{{bp.Path, op.Path}}
		if bp.ThumbPath != "" {
			paths = append(paths, [2]string{bp.ThumbPath, op.ThumbPath})
		}
		for _, pp := range paths {
			bd, err1 := contentDigest(boxPhotos, pp[0])
			od, err2 := contentDigest(officePhotos, pp[1])
			if err1 != nil || err2 != nil || bd != od {
				out = append(out, fmt.Sprintf("photo %d: content %s at the box and %s at the office differ (%v, %v)", id, pp[0], pp[1], err1, err2))
			}
		}
	}
	return out
}

// contentDigest is the SHA-256 of the photo content at path.
func contentDigest(c store.PhotoContent, path string) (string, error) {
	rc, _, err := c.OpenPhoto(context.Background(), path)
	if err != nil {
		return "", err
	}
	defer func() { _ = rc.Close() }()
	h := sha256.New()
	if _, err := io.Copy(h, rc); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
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

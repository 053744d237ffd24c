package server

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/gardend/gardend/store"
)

// The access model of decisions.md lives here and nowhere else: handlers load what a
// path addresses through companyFromPath, gardenFromPath or bedFromPath and compare the
// role they get with what the operation needs.

// role is what the caller may do with a company or garden. Roles are ordered.
type role int

const (
	roleNone   role = iota // cannot see it: 404
	roleReader             // may read it
	roleAdmin              // may change it and its permissions
)

func levelRole(l store.Level) role {
	switch l {
	case store.LevelAdmin:
		return roleAdmin
	case store.LevelUser:
		return roleReader
	}
	return roleNone
}

// companyRole: site admins administer everything; otherwise the company permission,
// and a garden permission on one of its gardens lets the caller read the company.
func companyRole(u *store.User, a store.Access) role {
	switch {
	case u.SiteAdmin:
		return roleAdmin
	case a.Company != "":
		return levelRole(a.Company)
	case a.GardenMember:
		return roleReader
	}
	return roleNone
}

// gardenRole is the higher of the company role from a company permission and the
// garden permission.
func gardenRole(u *store.User, a store.Access) role {
	if u.SiteAdmin {
		return roleAdmin
	}
	return max(levelRole(a.Company), levelRole(a.Garden))
}

// companyFromPath loads {company_id} for the current user: 404 when missing or
// invisible; returns the caller's role on it.
func (s *Server) companyFromPath(r *http.Request) (store.Company, role, error) {
	companyID, err := pathID(r, "company_id")
	if err != nil {
		return store.Company{}, roleNone, err
	}
	me := currentUser(r)
	missing := "company " + idText(companyID) + " not found"
	c, a, err := s.store.CompanyAccess(companyID, me.ID)
	if err != nil {
		return store.Company{}, roleNone, hideMissing(err, missing)
	}
	rl := companyRole(me, a)
	if rl == roleNone {
		return store.Company{}, roleNone, notFound(missing)
	}
	return c, rl, nil
}

// gardenFromPath loads {company_id}/{garden_id}: 404 when missing, invisible, or the
// garden belongs to another company.
func (s *Server) gardenFromPath(r *http.Request) (store.Garden, role, error) {
	companyID, gardenID, err := gardenPath(r)
	if err != nil {
		return store.Garden{}, roleNone, err
	}
	me := currentUser(r)
	missing := gardenNotFound(companyID, gardenID)
	g, a, err := s.store.GardenAccess(companyID, gardenID, me.ID)
	if err != nil {
		return store.Garden{}, roleNone, hideMissing(err, missing)
	}
	rl := gardenRole(me, a)
	if rl == roleNone {
		return store.Garden{}, roleNone, notFound(missing)
	}
	return g, rl, nil
}

// bedFromPath additionally loads {bed_id} of that garden (404 otherwise).
func (s *Server) bedFromPath(r *http.Request) (store.Garden, store.Bed, role, error) {
	companyID, gardenID, err := gardenPath(r)
	if err != nil {
		return store.Garden{}, store.Bed{}, roleNone, err
	}
	bedID, err := pathID(r, "bed_id")
	if err != nil {
		return store.Garden{}, store.Bed{}, roleNone, err
	}
	me := currentUser(r)
	missing := "bed " + idText(bedID) + " of " + gardenNotFound(companyID, gardenID)
	g, b, a, err := s.store.BedAccess(companyID, gardenID, bedID, me.ID)
	if err != nil {
		return store.Garden{}, store.Bed{}, roleNone, hideMissing(err, missing)
	}
	rl := gardenRole(me, a)
	if rl == roleNone {
		return store.Garden{}, store.Bed{}, roleNone, notFound(missing)
	}
	return g, b, rl, nil
}

func gardenPath(r *http.Request) (companyID, gardenID uint64, err error) {
	if companyID, err = pathID(r, "company_id"); err != nil {
		return 0, 0, err
	}
	gardenID, err = pathID(r, "garden_id")
	return companyID, gardenID, err
}

func gardenNotFound(companyID, gardenID uint64) string {
	return "garden " + idText(gardenID) + " of company " + idText(companyID) + " not found"
}

// hideMissing gives a missing record the same answer as an invisible one, so a 404
// does not reveal which part of the path exists.
func hideMissing(err error, msg string) error {
	if errors.Is(err, store.ErrNotFound) {
		return notFound(msg)
	}
	return err
}

// needAdmin answers 403 for a caller below admin; visibility (404) was settled when the
// role was resolved.
func needAdmin(rl role, what string) error {
	if rl < roleAdmin {
		return forbidden("only admins of the " + what + " may do this")
	}
	return nil
}

// adminCompany resolves the path's company and requires the caller to administer it.
func (s *Server) adminCompany(r *http.Request) (store.Company, error) {
	c, rl, err := s.companyFromPath(r)
	if err == nil {
		err = needAdmin(rl, "company")
	}
	return c, err
}

// adminGarden resolves the path's garden and requires the caller to administer it.
func (s *Server) adminGarden(r *http.Request) (store.Garden, error) {
	g, rl, err := s.gardenFromPath(r)
	if err == nil {
		err = needAdmin(rl, "garden")
	}
	return g, err
}

// adminBed resolves the path's bed and requires the caller to administer its garden.
func (s *Server) adminBed(r *http.Request) (store.Garden, store.Bed, error) {
	g, b, rl, err := s.bedFromPath(r)
	if err == nil {
		err = needAdmin(rl, "garden")
	}
	return g, b, err
}

func idText(id uint64) string { return strconv.FormatUint(id, 10) }

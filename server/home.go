package server

import (
	"net/http"
	"strconv"

	"github.com/gardend/gardend/store"
)

// One home per record (docs/sync.md): only the site where a company (and what is
// under it) or a user was made changes it; every other site holds a read-only
// replica under an id whose upper bits name the home. A write the caller could make
// at the home is answered here with 409 naming it; authorization comes first, so a
// caller without rights gets the usual 404 or 403 at every site.

// SiteNamer names the sites this one syncs with (server/sitesync's Box and Office).
type SiteNamer interface {
	SiteName(n uint32) (name string, ok bool)
}

// atHome is nil for a record homed here, else the 409 that names its home.
func (s *Server) atHome(kind string, id uint64) error {
	site := store.HomeSite(id)
	if site == 0 {
		return nil
	}
	name := "number " + strconv.FormatUint(uint64(site), 10)
	if s.sites != nil {
		if n, ok := s.sites.SiteName(site); ok {
			name = n
		}
	}
	return &apiError{status: http.StatusConflict,
		detail: kind + " " + idText(id) + " is managed at site " + name + "; change it there"}
}

// logAtHome adds to a log's rule of who may write it that the write happens at the
// log's home (its garden's, for a new log): checked after the caller's rights, so a
// caller without them hears 403 as anywhere, and one with them 409 naming the home.
func (s *Server) logAtHome(authorize store.LogAuthorizer) store.LogAuthorizer {
	return func(old *store.Log, next store.Log) error {
		if err := authorize(old, next); err != nil {
			return err
		}
		if old == nil {
			return s.atHome("garden", next.Garden)
		}
		return s.atHome("log", old.ID)
	}
}

// logActionAtHome is logAtHome for what is done to a whole log (its deletion, its
// photos).
func (s *Server) logActionAtHome(allowed func(store.Log) error) func(store.Log) error {
	return func(l store.Log) error {
		if err := allowed(l); err != nil {
			return err
		}
		return s.atHome("log", l.ID)
	}
}

package store

import (
	"fmt"
	"regexp"
	"time"
)

// Site is a field box registered at the head office (gardend site add). The office
// itself is site OfficeSite, named OfficeName, and not registered.
type Site struct {
	Number uint32 `json:"number"`
	Name   string `json:"name"`
	// UserKey is the public NKey of the site's NATS credentials.
	UserKey string     `json:"-"`
	Created time.Time  `json:"created"`
	Removed *time.Time `json:"removed,omitempty"`
	// What the site last reported (SiteStore.ReportSite).
	LastContact    *time.Time `json:"last_contact"`
	BacklogRecords int64      `json:"backlog_records"`
	BacklogBytes   int64      `json:"backlog_bytes"`
	OldestUnsent   *time.Time `json:"oldest_unsent"`
}

// SiteReport is what a site says of itself when it makes contact.
type SiteReport struct {
	At             time.Time
	BacklogRecords int64
	BacklogBytes   int64
	OldestUnsent   *time.Time
}

// SiteStore is the office's register of sites (PostgreSQL only: the office runs on
// it).
type SiteStore interface {
	// CreateSite registers a site under the lowest free number from 2 on; a name in
	// use, even by a removed site, is ErrConflict.
	CreateSite(name, userKey string) (Site, error)
	Sites() ([]Site, error)
	// RemoveSite marks the site removed (its replicas stay); ErrNotFound when unknown.
	RemoveSite(name string) (Site, error)
	ReportSite(number uint32, r SiteReport) error
	// LeaseSite makes node the one that applies the site's changes until the lease
	// runs out, unless another node holds it; it reports whether node holds it now.
	// The database's clock decides, so the nodes' clocks do not matter.
	LeaseSite(number uint32, node string, d time.Duration) (bool, error)
}

var siteNamePattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`)

// ValidateSiteName accepts 1–32 lower-case letters, digits and '-', starting with a
// letter, other than the office's name: the name appears in usernames
// (name@SITE) and NATS subjects.
func ValidateSiteName(name string) error {
	if !siteNamePattern.MatchString(name) || name == OfficeName {
		return Invalid("name", fmt.Sprintf("a site name is 1-32 lower-case letters, digits and '-', starting with a letter, and not %q", OfficeName))
	}
	return nil
}

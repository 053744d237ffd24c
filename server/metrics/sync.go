package metrics

import (
	"strconv"
	"time"
)

// SyncSnapshot is the sync between sites as a scrape finds it (docs/sync.md).
type SyncSnapshot struct {
	Connected      bool
	LastContact    time.Time
	BacklogRecords int64
	BacklogBytes   int64
	OldestUnsent   time.Time
	OverLimit      bool
	Sites          []SyncSite
}

// SyncSite is another site whose replicas this one holds.
type SyncSite struct {
	Number         uint32
	Name           string
	Applied        uint64
	LastContact    time.Time
	BacklogRecords int64
	BacklogBytes   int64
	// AppliedTotal and RefusedTotal count changes since this process started.
	AppliedTotal, RefusedTotal uint64
}

// WatchSync adds the gardend_sync_* families, read from read at every scrape. A
// failed read leaves them out of that scrape: no value is better than a wrong one.
func (m *Metrics) WatchSync(read func() (SyncSnapshot, error)) {
	m.mu.Lock()
	m.sync = read
	m.mu.Unlock()
}

func unix(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func writeSync(e *expo, read func() (SyncSnapshot, error)) {
	s, err := read()
	if err != nil {
		return
	}
	gauge := func(name, help string, v float64) {
		e.family(name, "gauge", help)
		e.sample(name, "", v)
	}
	gauge("gardend_sync_connected", "1 while this site is connected to the hub (a box: its leaf node; an office node: its client).", boolValue(s.Connected))
	gauge("gardend_sync_last_contact_timestamp_seconds", "When the other side last answered (a box: the office's last acknowledgment), Unix time; 0: never.", unix(s.LastContact))
	gauge("gardend_sync_backlog_records", "Changes recorded here that the other side has not acknowledged.", float64(s.BacklogRecords))
	gauge("gardend_sync_backlog_bytes", "Bytes of changes and pictures queued here for the other side.", float64(s.BacklogBytes))
	gauge("gardend_sync_oldest_unsent_timestamp_seconds", "When the oldest unacknowledged change was recorded, Unix time; 0: none.", unix(s.OldestUnsent))
	gauge("gardend_sync_over_limit", "1 while the backlog is over --sync-max-bytes (queueing paused).", boolValue(s.OverLimit))
	perSite := []struct {
		name, typ, help string
		value           func(SyncSite) float64
	}{
		{"gardend_sync_site_applied_sequence", "gauge", "The last change of the site applied here.", func(s SyncSite) float64 { return float64(s.Applied) }},
		{"gardend_sync_site_last_contact_timestamp_seconds", "gauge", "When the site last reported, Unix time by this site's clock; 0: never.", func(s SyncSite) float64 { return unix(s.LastContact) }},
		{"gardend_sync_site_backlog_records", "gauge", "The site's backlog as it last reported it: changes.", func(s SyncSite) float64 { return float64(s.BacklogRecords) }},
		{"gardend_sync_site_backlog_bytes", "gauge", "The site's backlog as it last reported it: bytes.", func(s SyncSite) float64 { return float64(s.BacklogBytes) }},
		{"gardend_sync_changes_applied_total", "counter", "Changes of the site applied by this process.", func(s SyncSite) float64 { return float64(s.AppliedTotal) }},
		{"gardend_sync_changes_refused_total", "counter", "Changes of the site refused (and logged) by this process: a record homed elsewhere, a malformed message.", func(s SyncSite) float64 { return float64(s.RefusedTotal) }},
	}
	for _, f := range perSite {
		e.family(f.name, f.typ, f.help)
		for _, site := range s.Sites {
			e.sample(f.name, "", f.value(site), "site", strconv.FormatUint(uint64(site.Number), 10), "site_name", site.Name)
		}
	}
}

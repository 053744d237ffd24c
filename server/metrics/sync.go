package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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

// WatchSync adds the gardend_sync_* families, read from read at every scrape. Call
// it once, before the registry is served.
func (m *Metrics) WatchSync(read func() (SyncSnapshot, error)) {
	m.reg.MustRegister(syncCollector{read})
}

var (
	siteLabels         = []string{"site", "site_name"}
	descSyncConnected  = prometheus.NewDesc("gardend_sync_connected", "1 while this site is connected to the hub (a box: its leaf node; an office node: its client).", nil, nil)
	descSyncContact    = prometheus.NewDesc("gardend_sync_last_contact_timestamp_seconds", "When the other side last answered (a box: the office's last acknowledgment), Unix time; 0: never.", nil, nil)
	descSyncRecords    = prometheus.NewDesc("gardend_sync_backlog_records", "Changes recorded here that the other side has not acknowledged.", nil, nil)
	descSyncBytes      = prometheus.NewDesc("gardend_sync_backlog_bytes", "Bytes of changes and pictures queued here for the other side.", nil, nil)
	descSyncOldest     = prometheus.NewDesc("gardend_sync_oldest_unsent_timestamp_seconds", "When the oldest unacknowledged change was recorded, Unix time; 0: none.", nil, nil)
	descSyncOverLimit  = prometheus.NewDesc("gardend_sync_over_limit", "1 while the backlog is over --sync-max-bytes (queueing paused).", nil, nil)
	descSiteApplied    = prometheus.NewDesc("gardend_sync_site_applied_sequence", "The last change of the site applied here.", siteLabels, nil)
	descSiteContact    = prometheus.NewDesc("gardend_sync_site_last_contact_timestamp_seconds", "When the site last reported, Unix time by this site's clock; 0: never.", siteLabels, nil)
	descSiteRecords    = prometheus.NewDesc("gardend_sync_site_backlog_records", "The site's backlog as it last reported it: changes.", siteLabels, nil)
	descSiteBytes      = prometheus.NewDesc("gardend_sync_site_backlog_bytes", "The site's backlog as it last reported it: bytes.", siteLabels, nil)
	descSiteAppliedTot = prometheus.NewDesc("gardend_sync_changes_applied_total", "Changes of the site applied by this process.", siteLabels, nil)
	descSiteRefusedTot = prometheus.NewDesc("gardend_sync_changes_refused_total", "Changes of the site refused (and logged) by this process: a record homed elsewhere, a malformed message.", siteLabels, nil)
)

type syncCollector struct {
	read func() (SyncSnapshot, error)
}

func (c syncCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSyncConnected, descSyncContact, descSyncRecords, descSyncBytes, descSyncOldest,
		descSyncOverLimit, descSiteApplied, descSiteContact, descSiteRecords, descSiteBytes, descSiteAppliedTot, descSiteRefusedTot} {
		ch <- d
	}
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

func (c syncCollector) Collect(ch chan<- prometheus.Metric) {
	s, err := c.read()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(descSyncConnected, err)
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(descSyncConnected, boolValue(s.Connected))
	gauge(descSyncContact, unix(s.LastContact))
	gauge(descSyncRecords, float64(s.BacklogRecords))
	gauge(descSyncBytes, float64(s.BacklogBytes))
	gauge(descSyncOldest, unix(s.OldestUnsent))
	gauge(descSyncOverLimit, boolValue(s.OverLimit))
	for _, site := range s.Sites {
		l := []string{strconv.FormatUint(uint64(site.Number), 10), site.Name}
		gauge(descSiteApplied, float64(site.Applied), l...)
		gauge(descSiteContact, unix(site.LastContact), l...)
		gauge(descSiteRecords, float64(site.BacklogRecords), l...)
		gauge(descSiteBytes, float64(site.BacklogBytes), l...)
		ch <- prometheus.MustNewConstMetric(descSiteAppliedTot, prometheus.CounterValue, float64(site.AppliedTotal), l...)
		ch <- prometheus.MustNewConstMetric(descSiteRefusedTot, prometheus.CounterValue, float64(site.RefusedTotal), l...)
	}
}

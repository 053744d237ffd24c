package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/gardend/gardend/server/metrics"
	"github.com/gardend/gardend/server/sitesync"
	"github.com/gardend/gardend/store"
)

// Sync between sites (docs/sync.md, server/sitesync): a field box runs a Box when
// Config.SyncUplink is set, an office node an Office when Config.SyncHub is; with
// neither, no NATS server starts and nothing of this runs.

// syncer is the running side of the sync, Box or Office.
type syncer interface {
	SiteNamer
	Run(ctx context.Context) error
	Status(ctx context.Context) (sitesync.Status, error)
	Close()
}

// openSync starts the box's or the office's sync (not its loops: Run does).
func (s *Server) openSync(ctx context.Context) error {
	c := s.cfg
	switch {
	case c.SyncUplink != "" && c.SyncHub != "":
		return errors.New("--sync-uplink (a field box) and --sync-hub (an office node) exclude each other")
	case c.SyncUplink != "":
		if c.SyncCreds == "" {
			return errors.New("--sync-uplink needs --sync-creds FILE: the site's credentials from gardend site add")
		}
		creds, err := os.ReadFile(c.SyncCreds)
		if err != nil {
			return fmt.Errorf("--sync-creds: %w", err)
		}
		box, err := sitesync.StartBox(ctx, sitesync.BoxConfig{Store: s.store, Images: s.images, Photos: s.photos, DataDir: c.DataDir,
			Uplink: c.SyncUplink, CredsFile: c.SyncCreds, CAFile: c.SyncCA, MaxBytes: c.SyncMaxBytes,
			Logger: s.log, Now: c.Now}, creds)
		if err != nil {
			return err
		}
		s.sync, s.sites = box, box
	case c.SyncHub != "":
		ob, ok := s.store.(sitesync.OfficeBackend)
		if !ok {
			return errors.New("--sync-hub needs the office's PostgreSQL store (--store postgres://…)")
		}
		office, err := sitesync.StartOffice(sitesync.OfficeConfig{Store: ob, HubURL: c.SyncHub, Node: c.Clouds.Node,
			Logger: s.log, Now: c.Now, SiteMaxBytes: c.SyncSiteMaxBytes})
		if err != nil {
			return err
		}
		s.sync, s.sites = office, office
	default:
		if st, err := s.store.ChangeStats(); err == nil && st.On && st.Records > 0 {
			s.log.Warn().Int("changes", st.Records).Msg("this site once synced with an office: its changes wait for --sync-uplink (or --sync-hub)")
		}
	}
	return nil
}

// homeRemoved reports whether id is a replica of a site the office removed: such
// replicas may be deleted here.
func (s *Server) homeRemoved(id uint64) bool {
	site := store.HomeSite(id)
	r, ok := s.sync.(interface{ SiteRemoved(uint32) bool })
	return site != 0 && ok && r.SiteRemoved(site)
}

// SyncStatus answers gardend sync status ("sync.status").
type SyncStatus struct{}

func (SyncStatus) OpName() string { return "sync.status" }

func (SyncStatus) run(ctx context.Context, a *Admin, answer func(sitesync.Status) error) error {
	if a.sync != nil {
		return once(answer)(a.sync.Status(ctx))
	}
	// No server runs here: what the database says, not connected.
	return once(answer)(sitesync.StoreStatus(a.store))
}

// watchSync exposes the sync's state as gardend_sync_* metrics.
func (s *Server) watchSync() {
	if s.sync == nil {
		return
	}
	s.metrics.WatchSync(func() (metrics.SyncSnapshot, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		st, err := s.sync.Status(ctx)
		if err != nil {
			return metrics.SyncSnapshot{}, err
		}
		out := metrics.SyncSnapshot{Connected: st.Connected, BacklogRecords: st.BacklogRecords, BacklogBytes: st.BacklogBytes,
			OverLimit: st.OverLimit}
		if st.LastContact != nil {
			out.LastContact = *st.LastContact
		}
		if st.OldestUnsent != nil {
			out.OldestUnsent = *st.OldestUnsent
		}
		var applied, refused map[uint32]uint64
		if c, ok := s.sync.(interface {
			Counters() (map[uint32]uint64, map[uint32]uint64)
		}); ok {
			applied, refused = c.Counters()
		}
		for _, site := range st.Sites {
			m := metrics.SyncSite{Number: site.Number, Name: site.Name, Applied: site.Applied,
				BacklogRecords: site.BacklogRecords, BacklogBytes: site.BacklogBytes,
				AppliedTotal: applied[site.Number], RefusedTotal: refused[site.Number]}
			if site.LastContact != nil {
				m.LastContact = *site.LastContact
			}
			out.Sites = append(out.Sites, m)
		}
		return out, nil
	})
}

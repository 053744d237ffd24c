package server

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/julienschmidt/httprouter"
	"golang.org/x/sync/errgroup"

	"github.com/gardend/gardend/server/scan"
	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/demo"
	"github.com/gardend/gardend/store"
)

// History of beds and plants (issue 18): every read of a bed, by a request or by the
// background reader (server/scan), is recorded; the store keeps each new
// measurement once and evaluates the alerts.

// HistoryConfig tunes history, the background reader and the demo's robot.
type HistoryConfig struct {
	// ScanInterval is how often the background reader reads every bed:
	// DefaultScanInterval when 0, off when negative.
	ScanInterval time.Duration
	// Retention is how long points are kept: store.DefaultHistoryRetention when 0,
	// for good when negative.
	Retention time.Duration
	// DemoScanInterval is how often the demo's robot scans (Config.Demo):
	// demo.DefaultScanInterval when 0, never when negative.
	DemoScanInterval time.Duration
	// Lease is the background reader's lease (scan.DefaultLease when 0).
	Lease time.Duration
}

// DefaultScanInterval is how often the background reader reads every bed.
const DefaultScanInterval = time.Hour

// demoHistory is how far back serve --demo seeds history, and how often.
const (
	demoHistory     = 60 * 24 * time.Hour
	demoHistoryStep = 3 * time.Hour
	// demoHistoryBatch readings go in one transaction on PostgreSQL (a few hundred
	// statements, well within its operation timeout); with bbolt a bed's all at once.
	demoHistoryBatch = 80
)

func (c HistoryConfig) withDefaults() HistoryConfig {
	if c.ScanInterval == 0 {
		c.ScanInterval = DefaultScanInterval
	}
	if c.Retention == 0 {
		c.Retention = store.DefaultHistoryRetention
	}
	if c.DemoScanInterval == 0 {
		c.DemoScanInterval = demo.DefaultScanInterval
	}
	return c
}

// openHistory makes the recorder and the background reader.
func (s *Server) openHistory() {
	cfg := s.cfg.History.withDefaults()
	s.recorder = scan.NewRecorder(s.store)
	var src scan.Source
	if s.spatial != nil {
		src = s.spatial
	}
	sc := scan.Config{Interval: max(cfg.ScanInterval, 0), Retention: max(cfg.Retention, 0), Node: s.cfg.Clouds.Node, Lease: cfg.Lease}
	s.reader = scan.NewReader(s.store, src, s.keepPlantIDs, bedName, s.recorder, sc, s.store.Now, s.log)
}

// runDemoRobot scans the demo garden every DemoScanInterval until ctx ends.
func (s *Server) runDemoRobot(ctx context.Context) {
	if s.demo == nil || s.cfg.History.withDefaults().DemoScanInterval < 0 {
		return
	}
	s.demo.srv.RunRobot(ctx, s.demo.sim, s.cfg.History.withDefaults().DemoScanInterval, s.cfg.Now)
}

// Reader is the background reader, for tests that read every bed at once.
func (s *Server) Reader() *scan.Reader { return s.reader }

// recordRead records a read of a bed whose plants carry their kept ids. It only
// logs a failure: the read itself succeeded, and the next read records again.
func (s *Server) recordRead(r *http.Request, b store.Bed, bed *spatial.Bed) {
	if _, _, err := s.recorder.Record(scan.Reading(b, bedName(b, bed), *bed, s.cfg.Now())); err != nil {
		s.log.Warn().Err(err).Str("request_id", requestID(r)).Uint64("bed_id", b.ID).Msg("record the bed's history")
	}
}

const bedHistoryPath = "/companies/:company_id/gardens/:garden_id/beds/:bed_id"

func (s *Server) historyRoutes() []route {
	return []route{
		{method: "GET", path: bedHistoryPath + "/history", handler: s.handleBedHistory},
		{method: "GET", path: bedHistoryPath + "/plants/:plant_id/history", handler: s.handlePlantHistory},
	}
}

// historyPointJSON is one point: the stream's fields, missing values left out.
type historyPointJSON struct {
	At           time.Time    `json:"at"`
	SoilHumidity *float64     `json:"soil_humidity,omitempty"`
	Yield        *float64     `json:"yield,omitempty"`
	Harvest      string       `json:"harvest,omitempty"`
	Health       []healthJSON `json:"health,omitempty"`
	Plants       *int64       `json:"plants,omitempty"`
}

type historyJSON struct {
	Bed    uint64             `json:"bed"`
	Plant  string             `json:"plant,omitempty"`
	Points []historyPointJSON `json:"points"`
}

func newHistoryJSON(bed uint64, plant string, pts []store.HistoryPoint) historyJSON {
	out := historyJSON{Bed: bed, Plant: plant, Points: make([]historyPointJSON, len(pts))}
	for i, p := range pts {
		v := historyPointJSON{At: p.At, SoilHumidity: p.SoilHumidity, Yield: p.Yield, Plants: p.Plants}
		if p.HarvestWeeks != nil {
			v.Harvest = spatial.HarvestText(int(*p.HarvestWeeks))
		}
		for _, h := range p.Health {
			v.Health = append(v.Health, healthJSON{Type: h.Type, Loglevel: h.Level})
		}
		out.Points[i] = v
	}
	return out
}

// defaultHistoryRange is the range a history answers without from.
const defaultHistoryRange = 30 * 24 * time.Hour

// parseHistoryRange reads from and to (ISO 8601 times or dates; to inclusive, a date
// to the end of its day): the last 30 days without them.
func parseHistoryRange(q url.Values, now time.Time) (from, until time.Time, err error) {
	v := &store.ValidationError{}
	until = now.Add(time.Microsecond)
	if s := q.Get("to"); s != "" {
		t, dateOnly, err := parseTimeOrDate(s)
		switch {
		case err != nil:
			v.Add("to", "to must be an ISO 8601 time or date, like 2026-05-31T18:00:00Z or 2026-05-31")
		case dateOnly:
			until = t.AddDate(0, 0, 1)
		default:
			until = t.Add(time.Microsecond)
		}
	}
	from = until.Add(-defaultHistoryRange)
	if s := q.Get("from"); s != "" {
		t, _, err := parseTimeOrDate(s)
		if err != nil {
			v.Add("from", "from must be an ISO 8601 time or date, like 2026-05-01T06:00:00Z or 2026-05-01")
		}
		from = t
	}
	if len(v.Fields) == 0 && !from.Before(until) {
		v.Add("to", "to must not be before from")
	}
	return from, until, v.OrNil()
}

func (s *Server) handleBedHistory(w http.ResponseWriter, r *http.Request) {
	g, b, _, err := s.bedFromPath(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	from, until, err := parseHistoryRange(r.URL.Query(), s.cfg.Now())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	pts, err := s.store.BedHistory(g.ID, b.ID, from, until, 0)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, newHistoryJSON(b.ID, "", pts))
}

func (s *Server) handlePlantHistory(w http.ResponseWriter, r *http.Request) {
	g, b, _, err := s.bedFromPath(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	plant := httprouter.ParamsFromContext(r.Context()).ByName("plant_id")
	from, until, err := parseHistoryRange(r.URL.Query(), s.cfg.Now())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	pts, err := s.store.PlantHistory(g.ID, b.ID, plant, from, until, 0)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, newHistoryJSON(b.ID, plant, pts))
}

// seedDemoHistory gives the demo's new beds 60 days of history, as the robot's scans
// every three hours would have left it (demo.Simulation), and logbook entries for
// their waterings and a harvest, so charts and alerts show something at once. Beds
// seeded on an earlier start are not seeded again. The logbook entries, a
// transaction (and on bbolt an fsync) each, are written while the history's
// readings are computed: a newcomer's first start waits for the longer of the two.
func (s *Server) seedDemoHistory(g store.Garden, author store.User, beds []store.Bed) error {
	if len(beds) == 0 || s.demo == nil || s.cfg.History.withDefaults().DemoScanInterval < 0 {
		return nil
	}
	start := time.Now()
	now := s.cfg.Now()
	from := now.Add(-demoHistory).Truncate(demoHistoryStep)
	points := 0
	var logsTook time.Duration
	var logs errgroup.Group
	logs.Go(func() error {
		logsStart := time.Now()
		defer func() { logsTook = time.Since(logsStart) }()
		for _, b := range beds {
			if err := s.seedDemoLogs(g, author, b, from, now); err != nil {
				return err
			}
		}
		return nil
	})
	err := s.seedDemoReadings(beds, from, now, &points)
	if lerr := logs.Wait(); err == nil {
		err = lerr
	}
	if err != nil {
		return err
	}
	s.log.Info().Int("beds", len(beds)).Int("points", points).Dur("took", time.Since(start)).Dur("logs_took", logsTook).Msg("demo history seeded")
	return nil
}

// seedDemoReadings records the beds' scans from from to now, counting the plants'
// points in points.
func (s *Server) seedDemoReadings(beds []store.Bed, from, now time.Time, points *int) error {
	for _, b := range beds {
		var ids map[string]string
		var batch []store.BedReading
		flush := func() error {
			rec, err := s.store.RecordReadings(batch)
			*points += rec.Plants
			batch = batch[:0]
			return err
		}
		for t := from; t.Before(now); t = t.Add(demoHistoryStep) {
			scanned, ok := s.demo.sim.ScanBed(b.UUID, t)
			if !ok {
				break
			}
			ds := demo.Dataset{Beds: []demo.Bed{scanned}}
			bed, _ := ds.WantBed(b.UUID)
			if ids == nil {
				if err := s.keepPlantIDs(&bed); err != nil {
					return err
				}
				ids = map[string]string{}
				for _, p := range bed.Plants {
					ids[p.Name] = p.ID
				}
			}
			for i := range bed.Plants {
				if id, ok := ids[bed.Plants[i].Name]; ok {
					bed.Plants[i].ID = id
				}
			}
			batch = append(batch, scan.Reading(b, bedName(b, &bed), bed, t))
			if s.shared != nil && len(batch) == demoHistoryBatch {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if err := flush(); err != nil {
			return err
		}
	}
	return nil
}

// seedDemoLogs records the bed's waterings since from, and a harvest, in the logbook.
func (s *Server) seedDemoLogs(g store.Garden, author store.User, b store.Bed, from, now time.Time) error {
	activity, harvest := store.LogActivity, store.LogHarvest
	for _, w := range s.demo.sim.Waterings(b.UUID, from, now) {
		title, notes := "Watered", "Irrigation ran for the whole bed."
		if _, err := s.store.CreateLog(g.ID, author.ID, store.LogPatch{Type: &activity, Title: &title, Notes: &notes, At: &w, Bed: &b.ID}, nil); err != nil {
			return err
		}
	}
	at := now.Add(-20 * 24 * time.Hour).Truncate(time.Hour)
	title := "Harvested"
	q := &store.Quantity{Value: 4.5, Unit: "kg"}
	_, err := s.store.CreateLog(g.ID, author.ID, store.LogPatch{Type: &harvest, Title: &title, At: &at, Bed: &b.ID, Quantity: &q}, nil)
	return err
}

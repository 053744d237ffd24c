package bolt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/gardend/gardend/store"
)

// Alerts' layout: the record by id (bucketAlerts); the open ones by what they are
// about, bed|plant|0|kind → id (bucketAlertsOpen), which evaluation reads; a garden's
// listing, garden|0|id for open ones and garden|1|^closed|id for closed ones, the
// most recently closed first (bucketGardenAlerts); and bed|id (bucketBedAlerts), for
// deleting a bed's.

// alertRecord is an alert as stored.
type alertRecord struct {
	ID       uint64          `json:"id"`
	Garden   uint64          `json:"garden"`
	Bed      uint64          `json:"bed"`
	BedName  string          `json:"bed_name"`
	Plant    string          `json:"plant,omitempty"`
	Kind     store.AlertKind `json:"kind"`
	Level    float64         `json:"level"`
	Severity float64         `json:"severity"`
	Species  string          `json:"species,omitempty"`
	Since    time.Time       `json:"since"`
	Closed   *time.Time      `json:"closed,omitempty"`
	Task     *uint64         `json:"task,omitempty"`
}

func recordOfAlert(a store.Alert) alertRecord {
	return alertRecord{ID: a.ID, Garden: a.Garden, Bed: a.Bed, BedName: a.BedName, Plant: a.Plant, Kind: a.Kind,
		Level: a.Level, Severity: a.Severity, Species: a.Species, Since: a.Since, Closed: a.Closed, Task: a.Task}
}

func (r alertRecord) alert() store.Alert {
	return store.Alert{ID: r.ID, Garden: r.Garden, Bed: r.Bed, BedName: r.BedName, Plant: r.Plant, Kind: r.Kind,
		Level: r.Level, Severity: r.Severity, Species: r.Species, Since: r.Since, Closed: r.Closed, Task: r.Task}
}

func openAlertKey(bedID uint64, plant string, kind store.AlertKind) []byte {
	k := append(itob(bedID), plant...)
	k = append(k, 0)
	return append(k, kind...)
}

func gardenAlertKey(a store.Alert) []byte {
	k := append(itob(a.Garden), 0)
	if a.Closed != nil {
		k[8] = 1
		k = binary.BigEndian.AppendUint64(k, ^atKey(*a.Closed))
	}
	return binary.BigEndian.AppendUint64(k, a.ID)
}

func getAlert(tx *bbolt.Tx, id uint64) (store.Alert, error) {
	r, err := getRecord[alertRecord](tx, bucketAlerts, "alert", id)
	return r.alert(), err
}

// openAlertsOfBed returns the bed's open alerts by plant ("" for the bed's own).
func openAlertsOfBed(tx *bbolt.Tx, bedID uint64) (map[string][]store.Alert, error) {
	out := map[string][]store.Alert{}
	prefix := itob(bedID)
	c := tx.Bucket(bucketAlertsOpen).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		a, err := getAlert(tx, btoi(v))
		if err != nil {
			return nil, err
		}
		out[a.Plant] = append(out[a.Plant], a)
	}
	return out, nil
}

// applyAlertPlan writes what an evaluation decided and counts it in out; the change
// feed gets each alert (closes after raises: an evaluation never closes and raises
// the same kind of one subject).
func applyAlertPlan(tx *bbolt.Tx, now time.Time, p store.AlertPlan, out *store.Recorded) error {
	alerts := tx.Bucket(bucketAlerts)
	for _, a := range p.Raise {
		id, err := alerts.NextSequence()
		if err != nil {
			return err
		}
		a.ID = id
		if err := putJSON(alerts, itob(id), recordOfAlert(a)); err != nil {
			return err
		}
		if err := tx.Bucket(bucketAlertsOpen).Put(openAlertKey(a.Bed, a.Plant, a.Kind), itob(id)); err != nil {
			return err
		}
		if err := tx.Bucket(bucketGardenAlerts).Put(gardenAlertKey(a), present); err != nil {
			return err
		}
		if err := tx.Bucket(bucketBedAlerts).Put(pairKey(a.Bed, id), present); err != nil {
			return err
		}
		if err := recordChange(tx, now, store.KindAlert, id, a.Garden, false); err != nil {
			return err
		}
	}
	for _, a := range p.Update {
		if err := putJSON(alerts, itob(a.ID), recordOfAlert(a)); err != nil {
			return err
		}
		if err := recordChange(tx, now, store.KindAlert, a.ID, a.Garden, false); err != nil {
			return err
		}
	}
	for _, a := range p.Close {
		wasOpen := a
		wasOpen.Closed = nil
		if err := tx.Bucket(bucketGardenAlerts).Delete(gardenAlertKey(wasOpen)); err != nil {
			return err
		}
		if err := tx.Bucket(bucketAlertsOpen).Delete(openAlertKey(a.Bed, a.Plant, a.Kind)); err != nil {
			return err
		}
		if err := tx.Bucket(bucketGardenAlerts).Put(gardenAlertKey(a), present); err != nil {
			return err
		}
		if err := putJSON(alerts, itob(a.ID), recordOfAlert(a)); err != nil {
			return err
		}
		if err := recordChange(tx, now, store.KindAlert, a.ID, a.Garden, false); err != nil {
			return err
		}
	}
	out.Raised += len(p.Raise)
	out.Closed += len(p.Close)
	return nil
}

// deleteBedAlerts deletes every alert of a bed with its index entries.
func deleteBedAlerts(tx *bbolt.Tx, bedID uint64) error {
	for _, id := range idsUnder(tx.Bucket(bucketBedAlerts), itob(bedID)) {
		a, err := getAlert(tx, id)
		if err != nil {
			return err
		}
		if a.Open() {
			if err := tx.Bucket(bucketAlertsOpen).Delete(openAlertKey(a.Bed, a.Plant, a.Kind)); err != nil {
				return err
			}
		}
		for _, del := range []struct {
			b []byte
			k []byte
		}{{bucketGardenAlerts, gardenAlertKey(a)}, {bucketBedAlerts, pairKey(bedID, id)}, {bucketAlerts, itob(id)}} {
			if err := tx.Bucket(del.b).Delete(del.k); err != nil {
				return err
			}
		}
	}
	return nil
}

// dropClosedAlertsBefore deletes the alerts closed before t with their index
// entries. A garden's closed alerts are listed most recently closed first, so
// those are the tail of each garden's listing: the cost is what goes.
func dropClosedAlertsBefore(tx *bbolt.Tx, t time.Time) error {
	cut := ^atKey(t) // closed before t: a greater key
	var doomed []uint64
	c := tx.Bucket(bucketGardenAlerts).Cursor()
	for k, _ := c.First(); k != nil; {
		garden := btoi(k[:8])
		closed := append(itob(garden), 1)
		for k, _ = c.Seek(binary.BigEndian.AppendUint64(bytes.Clone(closed), cut+1)); k != nil && bytes.HasPrefix(k, closed); k, _ = c.Next() {
			doomed = append(doomed, binary.BigEndian.Uint64(k[17:]))
		}
		if garden == math.MaxUint64 {
			break
		}
		k, _ = c.Seek(itob(garden + 1))
	}
	for _, id := range doomed {
		a, err := getAlert(tx, id)
		if err != nil {
			return err
		}
		for _, del := range []struct {
			b []byte
			k []byte
		}{{bucketGardenAlerts, gardenAlertKey(a)}, {bucketBedAlerts, pairKey(a.Bed, id)}, {bucketAlerts, itob(id)}} {
			if err := tx.Bucket(del.b).Delete(del.k); err != nil {
				return err
			}
		}
	}
	return nil
}

// alertView completes a stored alert for the API: the company, the bed's name as
// registered (else as read), and the task only while its log exists.
func alertView(tx *bbolt.Tx, a store.Alert, gardens map[uint64]store.Garden) (store.Alert, error) {
	g, ok := gardens[a.Garden]
	if !ok {
		var err error
		if g, err = getGarden(tx, a.Garden); err != nil {
			return a, err
		}
		gardens[a.Garden] = g
	}
	a.Company = g.Company
	if b, err := getBed(tx, a.Bed); err == nil && b.Name != "" {
		a.BedName = b.Name
	}
	if a.Task != nil && tx.Bucket(bucketLogs).Get(itob(*a.Task)) == nil {
		a.Task = nil
	}
	return a, nil
}

// Alerts lists a garden's open or closed alerts (store.AlertStore).
func (s *Store) Alerts(gardenID uint64, open bool) ([]store.Alert, error) {
	out := []store.Alert{}
	err := s.db.View(func(tx *bbolt.Tx) error {
		out = out[:0]
		if _, err := getGarden(tx, gardenID); err != nil {
			return err
		}
		prefix := itob(gardenID)
		if open {
			prefix = append(prefix, 0)
		} else {
			prefix = append(prefix, 1)
		}
		gardens := map[uint64]store.Garden{}
		c := tx.Bucket(bucketGardenAlerts).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			if !open && len(out) == store.MaxClosedAlerts {
				break
			}
			a, err := getAlert(tx, btoi(k[len(k)-8:]))
			if err != nil {
				return err
			}
			if a, err = alertView(tx, a, gardens); err != nil {
				return err
			}
			out = append(out, a)
		}
		return nil
	})
	store.SortAlerts(out)
	return out, err
}

// OpenAlerts lists the open alerts of the visible gardens (store.AlertStore).
func (s *Store) OpenAlerts(visible map[uint64]bool) ([]store.Alert, error) {
	out := []store.Alert{}
	err := s.db.View(func(tx *bbolt.Tx) error {
		out = out[:0]
		gardens := map[uint64]store.Garden{}
		return tx.Bucket(bucketAlertsOpen).ForEach(func(_, v []byte) error {
			a, err := getAlert(tx, btoi(v))
			if err != nil {
				return err
			}
			if visible != nil && !visible[a.Garden] {
				return nil
			}
			if a, err = alertView(tx, a, gardens); err != nil {
				return err
			}
			out = append(out, a)
			return nil
		})
	})
	store.SortAlerts(out)
	return out, err
}

// alertOf loads an alert addressed under a garden: one of another is ErrNotFound.
func alertOf(tx *bbolt.Tx, gardenID, alertID uint64) (store.Alert, error) {
	a, err := getAlert(tx, alertID)
	if err != nil {
		return a, err
	}
	if a.Garden != gardenID {
		return store.Alert{}, fmt.Errorf("alert %d of garden %d: %w", alertID, gardenID, store.ErrNotFound)
	}
	return a, nil
}

// Alert returns an alert of the garden (store.AlertStore).
func (s *Store) Alert(gardenID, alertID uint64) (store.Alert, error) {
	var out store.Alert
	err := s.db.View(func(tx *bbolt.Tx) error {
		a, err := alertOf(tx, gardenID, alertID)
		if err != nil {
			return err
		}
		out, err = alertView(tx, a, map[uint64]store.Garden{})
		return err
	})
	return out, err
}

// SetAlertTask records the alert's task (store.AlertStore).
func (s *Store) SetAlertTask(gardenID, alertID, logID uint64) (store.Alert, error) {
	var out store.Alert
	err := s.db.Update(func(tx *bbolt.Tx) error {
		a, err := alertOf(tx, gardenID, alertID)
		if err != nil {
			return err
		}
		if a.Task != nil && tx.Bucket(bucketLogs).Get(itob(*a.Task)) != nil {
			return store.AlertHasTask(a.ID, *a.Task)
		}
		if _, err := logOf(tx, gardenID, logID); err != nil {
			return err
		}
		a.Task = &logID
		if err := putJSON(tx.Bucket(bucketAlerts), itob(a.ID), recordOfAlert(a)); err != nil {
			return err
		}
		if err := recordChange(tx, s.now(), store.KindAlert, a.ID, a.Garden, false); err != nil {
			return err
		}
		out, err = alertView(tx, a, map[uint64]store.Garden{})
		return err
	})
	return out, err
}

// guidanceOf reads a garden's guidance, the defaults when it set none.
func guidanceOf(tx *bbolt.Tx, gardenID uint64) (store.Guidance, error) {
	g := store.DefaultGuidance()
	data := tx.Bucket(bucketGuidance).Get(itob(gardenID))
	if data == nil {
		return g, nil
	}
	if err := json.Unmarshal(data, &g); err != nil {
		return g, fmt.Errorf("decode guidance of garden %d: %w", gardenID, err)
	}
	if g.Advice == nil {
		g.Advice = map[string]map[store.AlertKind]store.Advice{}
	}
	return g, nil
}

// Guidance returns the garden's guidance (store.AlertStore).
func (s *Store) Guidance(gardenID uint64) (store.Guidance, error) {
	var out store.Guidance
	err := s.db.View(func(tx *bbolt.Tx) error {
		if _, err := getGarden(tx, gardenID); err != nil {
			return err
		}
		var err error
		out, err = guidanceOf(tx, gardenID)
		return err
	})
	return out, err
}

// SetGuidance replaces the garden's guidance and evaluates its alerts again
// (store.AlertStore).
func (s *Store) SetGuidance(gardenID uint64, g store.Guidance) (store.Guidance, store.Recorded, error) {
	g = g.Normalize()
	if err := g.Validate(); err != nil {
		return store.Guidance{}, store.Recorded{}, err
	}
	now := store.HistoryTime(s.now())
	var rec store.Recorded
	err := s.db.Update(func(tx *bbolt.Tx) error {
		rec = store.Recorded{}
		gd, err := getGarden(tx, gardenID)
		if err != nil {
			return err
		}
		if err := putJSON(tx.Bucket(bucketGuidance), itob(gardenID), g); err != nil {
			return err
		}
		if err := recordChange(tx, now, store.KindGuidance, gardenID, gd.Company, false); err != nil {
			return err
		}
		var plan store.AlertPlan
		for _, bedID := range idsUnder(tx.Bucket(bucketGardenBeds), itob(gardenID)) {
			p, err := reevaluateBed(tx, gardenID, bedID, g.Thresholds, now)
			if err != nil {
				return err
			}
			plan.Add(p)
		}
		return applyAlertPlan(tx, now, plan, &rec)
	})
	if err != nil {
		return store.Guidance{}, store.Recorded{}, err
	}
	return g, rec, nil
}

// reevaluateBed plans the alerts of a bed and its plants from their newest points.
func reevaluateBed(tx *bbolt.Tx, gardenID, bedID uint64, th store.Thresholds, now time.Time) (store.AlertPlan, error) {
	var plan store.AlertPlan
	open, err := openAlertsOfBed(tx, bedID)
	if err != nil {
		return plan, err
	}
	bedRec, _, err := getSeries(tx, bedID, "")
	if err != nil {
		return plan, err
	}
	prefix := itob(bedID)
	c := tx.Bucket(bucketHistorySeries).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var rec seriesRecord
		if err := json.Unmarshal(v, &rec); err != nil {
			return plan, fmt.Errorf("decode series of bed %d: %w", bedID, err)
		}
		if rec.Gone {
			continue
		}
		st, err := rec.state()
		if err != nil {
			return plan, err
		}
		plant := string(k[8:])
		sub := store.AlertSubject{Garden: gardenID, Bed: bedID, BedName: bedRec.Name, Plant: plant, Species: rec.Species}
		plan.Add(store.PlanAlerts(th, sub, open[plant], st.Values, now, false))
	}
	return plan, nil
}

// AcquireLease takes or renews a lease (store.LeaseStore).
func (s *Store) AcquireLease(name, node string, ttl time.Duration) (bool, error) {
	if err := store.ValidateLease(name, node, ttl); err != nil {
		return false, err
	}
	var held bool
	err := s.db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketLeases)
		now := s.now().UTC()
		var l leaseRecord
		if err := getJSON(b, []byte(name), &l); err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("decode lease %q: %w", name, err)
		}
		held = l.Node == "" || l.Node == node || !now.Before(l.Until)
		if !held {
			return nil
		}
		return putJSON(b, []byte(name), leaseRecord{Node: node, Until: now.Add(ttl)})
	})
	return held && err == nil, err
}

// ReleaseLease ends node's hold of a lease (store.LeaseStore).
func (s *Store) ReleaseLease(name, node string) error {
	if err := store.ValidateLease(name, node, time.Second); err != nil {
		return err
	}
	return s.db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketLeases)
		var l leaseRecord
		if err := getJSON(b, []byte(name), &l); err != nil {
			return nil
		}
		if l.Node != node {
			return nil
		}
		return b.Delete([]byte(name))
	})
}

type leaseRecord struct {
	Node  string    `json:"node"`
	Until time.Time `json:"until"`
}

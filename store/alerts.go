package store

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"
)

// Alerts: a bed (by its summary) or a plant (by its values) whose health aspect
// reaches the garden's threshold, or whose soil humidity falls below its minimum,
// has an open alert of that kind; a later measurement back inside closes it, and the
// record stays. At most one alert of a kind is open per bed or plant. What to do
// about it (the advice) is not stored: the server adds it from the garden's guidance
// when it answers.

// AlertKind is what an alert is about.
type AlertKind string

// The alert kinds.
const (
	AlertWater        AlertKind = "water"
	AlertNutrients    AlertKind = "nutrients"
	AlertDiseases     AlertKind = "diseases"
	AlertSoilHumidity AlertKind = "soil_humidity"
)

// AlertKinds lists the kinds in the order the API names them.
var AlertKinds = []AlertKind{AlertWater, AlertNutrients, AlertDiseases, AlertSoilHumidity}

// Alert is one alert as the API answers it (advice aside).
type Alert struct {
	ID      uint64 `json:"id"`
	Company uint64 `json:"company"`
	Garden  uint64 `json:"garden"`
	Bed     uint64 `json:"bed"`
	BedName string `json:"bed_name"`
	// Plant is the plant's kept id; "" for the bed's own alert.
	Plant string    `json:"plant,omitempty"`
	Kind  AlertKind `json:"kind"`
	// Level is the aspect's level, or the soil humidity, of the newest measurement
	// while open (the last one outside when closed).
	Level float64 `json:"level"`
	// Severity orders alerts (most severe first): how far past the threshold the
	// level is, in steps (AlertSeverity).
	Severity float64 `json:"-"`
	// Species is the plant's (the bed's most frequent) species, for the advice.
	Species string     `json:"-"`
	Since   time.Time  `json:"since"`
	Closed  *time.Time `json:"closed,omitempty"`
	// Task is the task log made from the alert; nil when none was, or it was deleted.
	Task *uint64 `json:"task,omitempty"`
}

// Open reports whether the alert is open.
func (a Alert) Open() bool { return a.Closed == nil }

// Thresholds are the limits of a garden's alerts.
type Thresholds struct {
	Water           int64   `json:"water"`
	Nutrients       int64   `json:"nutrients"`
	Diseases        int64   `json:"diseases"`
	SoilHumidityMin float64 `json:"soil_humidity_min"`
}

// DefaultThresholds apply to a garden that set none.
var DefaultThresholds = Thresholds{Water: 3, Nutrients: 3, Diseases: 2, SoilHumidityMin: 0.25}

// Limits of thresholds.
const (
	maxThresholdLevel = 1000
)

// Validate checks every threshold (field names as the guidance document has them).
func (t Thresholds) Validate(v *ValidationError) {
	for _, f := range []struct {
		name  string
		level int64
	}{{"water", t.Water}, {"nutrients", t.Nutrients}, {"diseases", t.Diseases}} {
		if f.level < 1 || f.level > maxThresholdLevel {
			v.Add("thresholds."+f.name, fmt.Sprintf("thresholds.%s must be a whole level from 1 to %d: an alert is raised when the %s level reaches it", f.name, maxThresholdLevel, f.name))
		}
	}
	if math.IsNaN(t.SoilHumidityMin) || t.SoilHumidityMin < 0 || t.SoilHumidityMin > 1 {
		v.Add("thresholds.soil_humidity_min", "thresholds.soil_humidity_min must be a number from 0 to 1: an alert is raised when the soil humidity falls below it (0 turns it off)")
	}
}

// level returns the threshold of a health kind.
func (t Thresholds) level(k AlertKind) int64 {
	switch k {
	case AlertWater:
		return t.Water
	case AlertNutrients:
		return t.Nutrients
	case AlertDiseases:
		return t.Diseases
	}
	return 0
}

// kindState is where one kind of a measurement stands against the thresholds.
type kindState struct {
	known  bool // the measurement has the value
	out    bool // outside the threshold: an alert belongs open
	level  float64
	weight float64 // AlertSeverity
}

// Evaluate says, per kind, whether v has the value and whether it is outside.
func (t Thresholds) evaluate(v HistoryValues) map[AlertKind]kindState {
	out := make(map[AlertKind]kindState, len(AlertKinds))
	for _, h := range v.Health {
		k := AlertKind(h.Type)
		th := t.level(k)
		if th == 0 {
			continue // not an aspect alerts are about
		}
		s := kindState{known: true, level: float64(h.Level)}
		s.out = h.Level >= th
		s.weight = AlertSeverity(k, s.level, t)
		out[k] = s
	}
	if v.SoilHumidity != nil {
		h := *v.SoilHumidity
		s := kindState{known: true, level: h, out: h < t.SoilHumidityMin}
		s.weight = AlertSeverity(AlertSoilHumidity, h, t)
		out[AlertSoilHumidity] = s
	}
	return out
}

// humidityStep is how far below the minimum one more step of severity lies.
const humidityStep = 0.05

// AlertSeverity is how far level is past the threshold of kind, in steps: 1 at the
// threshold, one more per level above it (per 0.05 below the minimum humidity).
func AlertSeverity(k AlertKind, level float64, t Thresholds) float64 {
	if k == AlertSoilHumidity {
		// The small allowance keeps 0.2 two steps below 0.25, as written.
		return 1 + math.Floor((t.SoilHumidityMin-level)/humidityStep+1e-9)
	}
	return 1 + level - float64(t.level(k))
}

// kindRank breaks ties of severity: diseases spread, then water, soil humidity and
// nutrients.
func kindRank(k AlertKind) int {
	switch k {
	case AlertDiseases:
		return 0
	case AlertWater:
		return 1
	case AlertSoilHumidity:
		return 2
	}
	return 3
}

// CompareAlerts orders alerts most severe first: severity, then kind (kindRank), a
// bed's before its plants', the oldest first, the lowest id.
func CompareAlerts(a, b Alert) int {
	if c := cmp.Compare(b.Severity, a.Severity); c != 0 {
		return c
	}
	if c := cmp.Compare(kindRank(a.Kind), kindRank(b.Kind)); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Plant, b.Plant); c != 0 && (a.Plant == "" || b.Plant == "") {
		return c
	}
	if c := a.Since.Compare(b.Since); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// SortAlerts sorts alerts most severe first.
func SortAlerts(as []Alert) { slices.SortFunc(as, CompareAlerts) }

// AlertSubject is what alerts are evaluated for: a bed (Plant "") or one plant.
type AlertSubject struct {
	Garden, Bed uint64
	BedName     string
	Plant       string
	Species     string
}

// AlertPlan is what an evaluation changes: alerts to raise (ID 0), open alerts whose
// level or names changed, and alerts to close.
type AlertPlan struct {
	Raise, Update, Close []Alert
}

// Empty reports whether the plan changes nothing.
func (p AlertPlan) Empty() bool { return len(p.Raise)+len(p.Update)+len(p.Close) == 0 }

// Add appends q to p.
func (p *AlertPlan) Add(q AlertPlan) {
	p.Raise = append(p.Raise, q.Raise...)
	p.Update = append(p.Update, q.Update...)
	p.Close = append(p.Close, q.Close...)
}

// PlanAlerts evaluates the newest values of a subject against the thresholds, given
// its open alerts: a kind outside raises an alert (since at) or updates the open one;
// a kind back inside closes it (at at); a kind the values lack leaves it as it is.
// gone closes every open alert: the plant is no longer in its bed.
func PlanAlerts(t Thresholds, sub AlertSubject, open []Alert, v HistoryValues, at time.Time, gone bool) AlertPlan {
	var p AlertPlan
	states := t.evaluate(v)
	byKind := make(map[AlertKind]Alert, len(open))
	for _, a := range open {
		byKind[a.Kind] = a
	}
	for _, k := range AlertKinds {
		s := states[k]
		a, isOpen := byKind[k]
		switch {
		case gone && isOpen, !gone && isOpen && s.known && !s.out:
			closed := HistoryTime(at)
			if closed.Before(a.Since) {
				closed = a.Since
			}
			a.Closed = &closed
			p.Close = append(p.Close, a)
		case gone || !s.known || !s.out:
		case isOpen:
			if a.Level != s.level || a.Severity != s.weight || a.BedName != sub.BedName || a.Species != sub.Species {
				a.Level, a.Severity, a.BedName, a.Species = s.level, s.weight, sub.BedName, sub.Species
				p.Update = append(p.Update, a)
			}
		default:
			p.Raise = append(p.Raise, Alert{
				Garden: sub.Garden, Bed: sub.Bed, BedName: sub.BedName, Plant: sub.Plant, Species: sub.Species,
				Kind: k, Level: s.level, Severity: s.weight, Since: HistoryTime(at),
			})
		}
	}
	return p
}

// MaxClosedAlerts is the most closed alerts a listing holds: the most recently
// closed.
const MaxClosedAlerts = 500

// AlertStore keeps alerts and the guidance they are evaluated with.
type AlertStore interface {
	// Alerts lists the garden's open (or closed) alerts, most severe first; closed
	// ones at most MaxClosedAlerts, the most recently closed.
	Alerts(gardenID uint64, open bool) ([]Alert, error)
	// OpenAlerts lists the open alerts of the gardens of visible (every garden when
	// nil), most severe first.
	OpenAlerts(visible map[uint64]bool) ([]Alert, error)
	// Alert returns an alert of the garden.
	Alert(gardenID, alertID uint64) (Alert, error)
	// SetAlertTask records that logID is the alert's task. An alert whose task
	// still exists is ErrConflict.
	SetAlertTask(gardenID, alertID, logID uint64) (Alert, error)

	// Guidance returns the garden's guidance (defaults when it set none).
	Guidance(gardenID uint64) (Guidance, error)
	// SetGuidance replaces the garden's guidance and, in the same transaction,
	// evaluates the alerts of every bed and plant of the garden against the newest
	// points with the new thresholds (AlertPlan per subject, dated now).
	SetGuidance(gardenID uint64, g Guidance) (Guidance, Recorded, error)
}

// AlertHasTask is the refusal of a second task for an alert whose task still exists.
func AlertHasTask(alertID, logID uint64) error {
	return fmt.Errorf("%w: alert %d has a task already (log %d); finish or delete that task to make another", ErrConflict, alertID, logID)
}

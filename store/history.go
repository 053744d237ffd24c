package store

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// History: a time series per bed (its summary, as the beds stream reports it) and per
// plant (its values), one point per measurement the spatial server reported. Reads
// of a bed (a beds stream, a plants request, the background reader) hand what they
// saw to HistoryStore.RecordReading, which keeps a point for each plant whose
// measurement is new and, when any was, one for the bed, and evaluates the alerts of
// what changed, all in one transaction. A measurement is the pair (geometry uuid,
// stamp): the same pair read twice, by any reader on any node, is kept once.
//
// Points of one series are kept in chunks of one UTC day (EncodeChunk), so a listing
// of two years reads about 730 records and a point costs little more than its values.

// HealthLevel is one health aspect's level of concern.
type HealthLevel struct {
	Type  string `json:"type"`
	Level int64  `json:"level"`
}

// HistoryValues are the values of one point; nil or empty means the reading did not
// have the value, and it stays missing.
type HistoryValues struct {
	SoilHumidity *float64
	Yield        *float64
	// HarvestWeeks is the remaining time to harvest in whole weeks, as of the point.
	HarvestWeeks *int64
	// Health is sorted as the stream sorts it: water, nutrients, diseases, others by
	// name.
	Health []HealthLevel
	// Plants is the number of plants of a bed's point; nil for a plant's.
	Plants *int64
}

// HistoryPoint is one point of a series.
type HistoryPoint struct {
	At time.Time
	HistoryValues
}

// PlantReading is one plant as a read of its bed showed it.
type PlantReading struct {
	// ID is the id gardend keeps for the plant (KeepPlantIDs).
	ID string
	// Measurement and Stamp identify the measurement its values come from: the
	// geometry uuid and its stamp (zero when the server sent none).
	Measurement string
	Stamp       time.Time
	Species     string
	Values      HistoryValues
}

// At is when the plant's point is dated: its stamp, or read when the stamp is
// missing or outside the range a point may have.
func (p PlantReading) At(read time.Time) time.Time {
	if p.Stamp.IsZero() || !InHistoryRange(p.Stamp) {
		return HistoryTime(read)
	}
	return HistoryTime(p.Stamp)
}

// BedReading is what one read of a bed showed.
type BedReading struct {
	Bed uint64
	// Name is what the bed is called (as registered, else its project's name).
	Name string
	// Read is when the read was made; At is when its bed point is dated: the newest
	// of the plants' points (BedReadingAt).
	Read, At time.Time
	// Species is the bed's most frequent species.
	Species string
	// Summary is the bed's summary as of At.
	Summary HistoryValues
	// Plants are every plant of the bed; a plant with a kept series that is not
	// among them is gone (its open alerts close).
	Plants []PlantReading
}

// BedReadingAt is the time of a bed's point: the newest of its plants' points, or
// read for a bed without plants.
func BedReadingAt(plants []PlantReading, read time.Time) time.Time {
	var at time.Time
	for _, p := range plants {
		if t := p.At(read); t.After(at) {
			at = t
		}
	}
	if at.IsZero() {
		return HistoryTime(read)
	}
	return at
}

// Recorded says what RecordReading kept.
type Recorded struct {
	// Plants counts the plants that had a new measurement; Bed is true when a bed
	// point was kept.
	Plants int
	Bed    bool
	// Raised and Closed count the alerts raised and closed.
	Raised, Closed int
}

// Limits of history.
const (
	// MaxHistoryPoints is the most points one listing returns; a range that holds
	// more is refused (TooManyPoints), so an answer stays bounded.
	MaxHistoryPoints = 20000
	// DefaultHistoryRetention is how long points are kept.
	DefaultHistoryRetention = 730 * 24 * time.Hour
	// maxSpecies bounds a species name kept with a series.
	maxSpecies = 200
)

// TooManyPoints is the refusal of a range that holds more than limit points. It is
// ErrInvalid under errors.Is.
func TooManyPoints(limit int) error {
	return Invalid("from", fmt.Sprintf("the range holds more than %d points; narrow it with from and to", limit))
}

// HistoryLimit is a listing's limit: MaxHistoryPoints when 0 or more.
func HistoryLimit(limit int) int {
	if limit <= 0 || limit > MaxHistoryPoints {
		return MaxHistoryPoints
	}
	return limit
}

// The range a point's time must lie in, so that every backend keys it alike.
var (
	minHistoryTime = time.Unix(0, 0).UTC()
	maxHistoryTime = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

// InHistoryRange reports whether t may date a point.
func InHistoryRange(t time.Time) bool {
	return !t.Before(minHistoryTime) && t.Before(maxHistoryTime)
}

// HistoryTime is t as a point keeps it: UTC, microseconds.
func HistoryTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// HistoryDay is the UTC day a point of time t is kept under: days since 1970-01-01.
func HistoryDay(t time.Time) uint32 {
	return uint32(t.UnixMicro() / microsPerDay)
}

// DayStart is the first instant of a HistoryDay.
func DayStart(day uint32) time.Time {
	return time.UnixMicro(int64(day) * microsPerDay).UTC()
}

const microsPerDay = 24 * 3600 * 1_000_000

// HistoryRange is the days to read for points with from ≤ at < until, clamped to the
// range points may have; ok is false when it is empty.
func HistoryRange(from, until time.Time) (first, last uint32, ok bool) {
	if from.Before(minHistoryTime) {
		from = minHistoryTime
	}
	if !until.Before(maxHistoryTime) {
		until = maxHistoryTime
	}
	if !from.Before(until) {
		return 0, 0, false
	}
	return HistoryDay(from), HistoryDay(until.Add(-time.Microsecond)), true
}

// SeriesState is what a series remembers of its newest point: the measurement it
// came from, for deduplication, and its values, for alerts.
type SeriesState struct {
	Measurement string
	Stamp       time.Time
	At          time.Time
	Species     string
	Values      HistoryValues
	// Gone: the plant was missing from the newest read of its bed.
	Gone bool
}

// IsNew reports whether a plant reading is a measurement the series has not kept: a
// new geometry uuid or a newer stamp. A reading older than the newest kept point (a
// newer measurement was deleted on the server) is not new: it may have been kept
// before, and history is not rewritten.
func (s SeriesState) IsNew(p PlantReading, read time.Time) bool {
	if s.Measurement == "" {
		return true
	}
	if p.Measurement == s.Measurement && p.Stamp.Equal(s.Stamp) {
		return false
	}
	if !p.Stamp.IsZero() && !s.Stamp.IsZero() && p.Stamp.Before(s.Stamp) {
		return false
	}
	return !p.At(read).Before(s.At)
}

// SpeciesName bounds a species for keeping.
func SpeciesName(s string) string {
	if len(s) > maxSpecies {
		return s[:maxSpecies]
	}
	return s
}

// HistoryStore keeps the history of beds and plants and their alerts.
type HistoryStore interface {
	// RecordReading keeps what a read of a bed showed, in one transaction: a point
	// for each plant whose measurement is new (SeriesState.IsNew), a bed point when
	// any was, and the alerts of the bed and those plants evaluated against the
	// garden's thresholds. A bed that is gone records nothing (no error).
	RecordReading(r BedReading) (Recorded, error)
	// RecordReadings is RecordReading for several readings in one transaction (the
	// demo's seeded history).
	RecordReadings(rs []BedReading) (Recorded, error)
	// BedHistory lists a bed's points with from ≤ at < until, oldest first;
	// ErrTooManyPoints when there are more than limit (0: MaxHistoryPoints).
	BedHistory(gardenID, bedID uint64, from, until time.Time, limit int) ([]HistoryPoint, error)
	// PlantHistory is BedHistory for one plant of the bed (by its kept id); a plant
	// without points has an empty history.
	PlantHistory(gardenID, bedID uint64, plant string, from, until time.Time, limit int) ([]HistoryPoint, error)
	// DropHistoryBefore deletes the points dated before t and returns how many, and
	// the alerts closed before t (open ones stay, however old).
	DropHistoryBefore(t time.Time) (int, error)
}

// maxPlantKey bounds a plant id a series is kept under (a uuid, or one PlanPlantIDs
// derived).
const maxPlantKey = 128

// ValidateReading checks a reading before it is recorded: a bed, the times, plant
// ids present, distinct and short, and every value finite.
func ValidateReading(r BedReading) error {
	v := &ValidationError{}
	if r.Bed == 0 {
		v.Add("bed", "a reading needs its bed")
	}
	if r.Read.IsZero() || !InHistoryRange(r.Read) || !InHistoryRange(r.At) {
		v.Add("at", "a reading's times must lie between 1970 and 2200")
	}
	checkValues(v, "summary", r.Summary)
	seen := make(map[string]bool, len(r.Plants))
	for _, p := range r.Plants {
		switch {
		case p.ID == "" || len(p.ID) > maxPlantKey || strings.ContainsRune(p.ID, 0):
			v.Add("plant", fmt.Sprintf("plant id %q must be 1 to %d bytes without NUL", p.ID, maxPlantKey))
		case seen[p.ID]:
			v.Add("plant", fmt.Sprintf("plant %q is twice in one reading", p.ID))
		}
		seen[p.ID] = true
		checkValues(v, "plant "+p.ID, p.Values)
	}
	return v.OrNil()
}

func checkValues(v *ValidationError, field string, h HistoryValues) {
	for _, f := range []*float64{h.SoilHumidity, h.Yield} {
		if f != nil && (math.IsNaN(*f) || math.IsInf(*f, 0)) {
			v.Add(field, field+": values must be finite numbers")
		}
	}
	for _, l := range h.Health {
		if l.Type == "" {
			v.Add(field, field+": a health level needs its aspect")
		}
	}
}

package store

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// History, alerts and guidance in archives (format 4): a garden's guidance; each
// series with what it remembers of its newest point; each series' chunks of points
// as stored (EncodeChunk), named by bed, plant and day; and each alert. Series are
// named by bed and plant, not by the ids a backend gives them, and listed in that
// order, chunks then by day: both backends write the same archive.

// The archive kinds of history.
const (
	KindGuidance      = "guidance"
	KindHistorySeries = "history_series"
	KindHistoryChunk  = "history_chunk"
	KindAlert         = "alert"
)

// ArchivedGuidance is a garden's guidance.
type ArchivedGuidance struct {
	Garden uint64 `json:"garden"`
	Guidance
}

// ArchivedSeries is a series without its points.
type ArchivedSeries struct {
	Bed         uint64     `json:"bed"`
	Plant       string     `json:"plant"`
	Measurement string     `json:"measurement,omitempty"`
	Stamp       *time.Time `json:"stamp,omitempty"`
	At          time.Time  `json:"at"`
	Species     string     `json:"species,omitempty"`
	// Values are AppendValues' encoding of its newest point.
	Values []byte `json:"values"`
	Gone   bool   `json:"gone,omitempty"`
	Name   string `json:"name,omitempty"`
}

// State is the series' state.
func (a ArchivedSeries) State() (SeriesState, error) {
	st := SeriesState{Measurement: a.Measurement, At: a.At, Species: a.Species, Gone: a.Gone}
	if a.Stamp != nil {
		st.Stamp = *a.Stamp
	}
	v, err := DecodeValues(a.Values)
	st.Values = v
	return st, err
}

// ArchivedChunk is a series' points of one day.
type ArchivedChunk struct {
	Bed    uint64 `json:"bed"`
	Plant  string `json:"plant"`
	Day    uint32 `json:"day"`
	Points []byte `json:"points"`
}

// ArchivedAlert is an alert with what the API does not show.
type ArchivedAlert struct {
	ID       uint64     `json:"id"`
	Garden   uint64     `json:"garden"`
	Bed      uint64     `json:"bed"`
	BedName  string     `json:"bed_name"`
	Plant    string     `json:"plant,omitempty"`
	Kind     AlertKind  `json:"kind"`
	Level    float64    `json:"level"`
	Severity float64    `json:"severity"`
	Species  string     `json:"species,omitempty"`
	Since    time.Time  `json:"since"`
	Closed   *time.Time `json:"closed,omitempty"`
	Task     *uint64    `json:"task,omitempty"`
}

// ArchivedAlertOf is a in archive form.
func ArchivedAlertOf(a Alert) ArchivedAlert {
	return ArchivedAlert{ID: a.ID, Garden: a.Garden, Bed: a.Bed, BedName: a.BedName, Plant: a.Plant, Kind: a.Kind,
		Level: a.Level, Severity: a.Severity, Species: a.Species, Since: a.Since, Closed: a.Closed, Task: a.Task}
}

// Alert is the archived alert as an Alert (without its company).
func (a ArchivedAlert) Alert() Alert {
	return Alert{ID: a.ID, Garden: a.Garden, Bed: a.Bed, BedName: a.BedName, Plant: a.Plant, Kind: a.Kind,
		Level: a.Level, Severity: a.Severity, Species: a.Species, Since: a.Since, Closed: a.Closed, Task: a.Task}
}

func validSeriesName(bed uint64, plant string) error {
	if bed == 0 {
		return Invalid("bed", "bed id must not be 0")
	}
	if len(plant) > maxPlantKey || strings.ContainsRune(plant, 0) {
		return Invalid("plant", fmt.Sprintf("plant id %q must be at most %d bytes without NUL", plant, maxPlantKey))
	}
	return nil
}

// checkHistoryArchived checks a record of a history kind; ok is false for another kind.
func checkHistoryArchived(record any) (handled bool, err error) {
	switch r := record.(type) {
	case *ArchivedGuidance:
		if r.Garden == 0 {
			return true, Invalid("garden", "garden id must not be 0")
		}
		if r.Advice == nil {
			r.Advice = map[string]map[AlertKind]Advice{}
		}
		r.Guidance = r.Normalize()
		return true, r.Validate()
	case *ArchivedSeries:
		if err := validSeriesName(r.Bed, r.Plant); err != nil {
			return true, err
		}
		if !InHistoryRange(r.At) {
			return true, Invalid("at", "a series' newest point must lie between 1970 and 2200")
		}
		if _, err := DecodeValues(r.Values); err != nil {
			return true, Invalid("values", err.Error())
		}
		return true, nil
	case *ArchivedChunk:
		if err := validSeriesName(r.Bed, r.Plant); err != nil {
			return true, err
		}
		n, err := ChunkLen(r.Day, r.Points)
		switch {
		case err != nil:
			return true, Invalid("points", err.Error())
		case n == 0:
			return true, Invalid("points", "a chunk holds at least one point")
		case !InHistoryRange(DayStart(r.Day)):
			return true, Invalid("day", "a chunk's day must lie between 1970 and 2200")
		}
		return true, nil
	case *ArchivedAlert:
		switch {
		case r.ID == 0 || r.Garden == 0 || r.Bed == 0:
			return true, Invalid("id", "alert, garden and bed ids must not be 0")
		case !slices.Contains(AlertKinds, r.Kind):
			return true, Invalid("kind", fmt.Sprintf("unknown alert kind %q", r.Kind))
		case math.IsNaN(r.Level) || math.IsInf(r.Level, 0) || math.IsNaN(r.Severity) || math.IsInf(r.Severity, 0):
			return true, Invalid("level", "level and severity must be finite")
		case r.Since.IsZero() || r.Closed != nil && r.Closed.Before(r.Since):
			return true, Invalid("since", "an alert starts before it closes")
		}
		return true, validSeriesName(r.Bed, r.Plant)
	}
	return false, nil
}

// newHistoryRecord is an empty record of a history kind, or nil.
func newHistoryRecord(kind string) any {
	switch kind {
	case KindGuidance:
		return &ArchivedGuidance{}
	case KindHistorySeries:
		return &ArchivedSeries{}
	case KindHistoryChunk:
		return &ArchivedChunk{}
	case KindAlert:
		return &ArchivedAlert{}
	}
	return nil
}
